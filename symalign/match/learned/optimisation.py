"""Learned matching (Theus et al.): optimise the transforms for low loss *between* the models.

One optimiser serves a pair (A fixed, B's transform learned) and N models aligned to a shared
universe (the first fixed, every other model's transform learned jointly). Each step draws
mixing weights w (see `mixing`) and descends the task loss of θ(w) = Σ w_i T_i(θ_i) on a
training batch; the transforms start from weight matching (the start matters) and are
parametrised by `latent.LatentElement`.

Why it converges (issue #14): the step size decays (cosine); beside learned continuous maps the
permutations stay those of weight matching (straight-through flips made the objective worse on both
zoo families and made results depend on round-off); when permutations are all there is to learn they
follow their own faster decay and are frozen at `freeze_at` of the run (soft ones are rounded there);
image batches get Gaussian input noise (`input_noise`), without which the transform over-fits small
training sets. A fixed check (the loss at a few fixed points of the path or simplex, on fixed batches
drawn once from the *training* split, so the reported evaluation split never steers the result) is
read every `check_every` steps; the best state it has seen is kept. The run stops early when
`patience` checks in a row improve on the best by less than `min_delta` and either learning never
beat its start (the start is then already optimal: a planted pair) or the step size has decayed below
a tenth of its peak (the run has converged). The start is the first check, so learning never
returns something worse than its start."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace

import torch

from symalign.data.defaults import learned_defaults
from symalign.device import reproducible
from symalign.errors import SymalignError, require_at_least
from symalign.match.learned.checks import budget_checks
from symalign.match.learned.latent import Mover, NormalizedMomentum
from symalign.match.learned.objective import PathObjective, WeightSampler, check_points
from symalign.match.learned.start import activation_permutation_start, identity_start, start_inputs
from symalign.match.matchers import MatchInputs, MatchOutput, declared_default
from symalign.models.family import TransformerModel
from symalign.symmetry.spec import SymmetrySpec
from symalign.symmetry.transform import Transform

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class LearnedOptions:
    """The learned optimiser's settings. A declared option's default is its declaration's
    (symalign.match.options; the data's ones: text's, for a caller without data); the checks left None are
    sized from the steps (symalign.match.learned.checks). The rest are the optimiser's own knobs."""

    steps: int = learned_defaults("")["steps"]  # at most; AlignConfig writes the data's default into the record
    lr: float = declared_default("lr")
    perm_lr: float | None = None  # None: 0.1 beside continuous maps, 2.0 when permutations are all there is
    batch_size: int = declared_default("batch_size")
    lambdas: str = declared_default("lambdas")  # pairs: the distribution of λ per step
    alpha: float = declared_default("alpha")  # N ≥ 3 models: Dirichlet(α·1) mixing weights per step
    seed: int = 0
    soft: bool = False
    check_every: int | None = declared_default("check_every")  # None: sized from the steps
    patience: int = declared_default("patience")
    min_delta: float = 1e-3
    freeze_at: float | None = None  # None: 0 (weight matching's) beside continuous maps (soft: 0.5); 0.9 alone
    check_examples: int | None = declared_default("check_examples")  # None: sized from the steps
    check_points: str | None = declared_default("check_points")  # path | midpoint; None: sized from the steps
    round: bool = declared_default("round")  # soft: False keeps the doubly-stochastic maps to the end
    input_noise: float = learned_defaults("")["input_noise"]  # std of Gaussian noise on training images
    start: str = declared_default("start")  # weight | activation | auto | identity (symalign.match.options)

    def __post_init__(self) -> None:
        require_at_least("--steps", self.steps, 1)
        for name, sized in budget_checks(self.steps).items():  # frozen: set once, here
            if getattr(self, name) is None:
                object.__setattr__(self, name, sized)
        if not (self.lr > 0 and (self.perm_lr is None or self.perm_lr > 0)):
            raise SymalignError("learning rates must be positive")
        if self.freeze_at is not None and not 0 <= self.freeze_at <= 1:
            raise SymalignError(f"freeze_at is a fraction of the steps in [0, 1]; got {self.freeze_at}")
        if not (self.input_noise >= 0 and math.isfinite(self.input_noise)):
            raise SymalignError(f"--input-noise must be 0 or more; got {self.input_noise}")
        if self.batch_size < 1 or self.check_examples < 1 or self.check_every < 1 or self.patience < 1:
            raise SymalignError("batch size, check size, check interval and patience must be at least 1")
        if not self.round and not self.soft:
            raise SymalignError("--no-round is soft matching's (--method soft): learned permutations are hard")

    def for_problem(self, continuous: bool) -> LearnedOptions:
        """Fill the permutation settings from what is learned. Measured on both zoo families: beside
        learned rotations, permutation flips make the objective worse (the rotations absorb small
        mismatches smoothly; gpt-shakespeare 0↔1: barrier 0.046 with weight matching's permutations
        kept, 0.047 with flips until half-way, whose timing also depended on round-off), so hard
        permutations stay fixed; soft ones relax until half-way, which is what soft matching is for.
        When permutations are all there is to learn, flips are the only lever (large step, most of
        the run)."""
        freeze = 0.5 if self.soft else 0.0
        if not self.round:
            freeze_at = 1.0  # soft maps kept to the end: never rounded while learning
        else:
            freeze_at = self.freeze_at if self.freeze_at is not None else (freeze if continuous else 0.9)
        return replace(self, perm_lr=self.perm_lr if self.perm_lr is not None else (0.1 if continuous else 2.0),
                       freeze_at=freeze_at)


@dataclass
class LearnedResult:
    transforms: list[Transform]  # one per model after the first
    history: list[dict]  # per step: weights, loss, permutation flips, learning rate, check value
    summary: dict  # steps run, best step, best and starting check values, why it stopped


@torch.no_grad()
def unrounded_tradeoff(objective: PathObjective, mover: Mover, batch) -> dict:
    """Soft matching kept unrounded (Theus et al. App. C.2): the midpoint loss of the path to B under
    the doubly-stochastic maps, against how far that path's end moved from B (its loss, and the
    relative distance of its weights from B's rounded image), beside the rounded result's midpoint.
    Measured on the run's fixed check batch."""
    soft, hard = [mover.transform(hard=False)], [mover.final()]
    soft_b = objective.mixed_params([0.0, 1.0], soft)
    hard_b = objective.mixed_params([0.0, 1.0], hard)
    num = sum(float((soft_b[k] - hard_b[k]).double().pow(2).sum()) for k in hard_b)
    den = sum(float(hard_b[k].double().pow(2).sum()) for k in hard_b)

    def loss(weights, transforms) -> float:
        return float(objective.loss_at(weights, transforms, *batch))

    return {"midpoint_loss": loss([0.5, 0.5], soft), "rounded_midpoint_loss": loss([0.5, 0.5], hard),
            "endpoint_loss": loss([0.0, 1.0], soft), "b_loss": loss([0.0, 1.0], hard),
            "a_loss": loss([1.0, 0.0], hard), "endpoint_distance": (num / max(den, 1e-300)) ** 0.5}


def check_plan(options: LearnedOptions, n_models: int = 2) -> str:
    """One line, before a run, on what its checks cost next to its steps: a check is
    check_examples × points forward passes, a step batch_size forward-and-backward passes (≈ 3
    forwards each), so at real scale a few checks can outweigh a short run (issue #46)."""
    points = len(check_points(n_models, options.check_points))
    checks = 1 + options.steps // options.check_every + (options.steps % options.check_every != 0)
    each = options.check_examples * points / (3 * options.batch_size)
    return (f"{options.steps} steps of {options.batch_size} examples; {checks} checks of {options.check_examples} "
            f"examples × {points} points, each ≈ {each:.1f} steps' work (all checks ≈ {checks * each:.0f} steps'; "
            f"--check-examples, --check-points, --check-every size them)")


def _cosine(step: int, total: int) -> float:
    return 0.5 * (1.0 + math.cos(math.pi * min(step, total) / max(total, 1)))


def _rate(group: str, step: int, freeze_step: int, options: LearnedOptions) -> float:
    """Cosine decay over the run; permutations decay faster, reaching 0 at the freeze."""
    if group == "perm":
        return options.perm_lr * _cosine(step - 1, freeze_step)
    return options.lr * _cosine(step - 1, options.steps)


def learn_transforms(models: list[TransformerModel], starts: list[Transform], spec: SymmetrySpec,
                     classes: dict[str, str], data, options: LearnedOptions = LearnedOptions(),
                     device: torch.device | str = "cpu", progress: Progress | None = None,
                     alternatives: list[list[Transform]] = ()) -> LearnedResult:
    """Refine the transforms of models[1:] (models[0] is the fixed reference) for low task loss
    anywhere on the path or simplex between them; all models are canonical, same architecture.
    `alternatives`: other starts (hard permutations only); learning begins from whichever of
    `starts` and these has the lowest check (`summary["start"]` says which: 0 is `starts`)."""
    if alternatives and options.soft:
        raise ValueError("alternative starts are for hard permutations (soft latents draw noise when built)")
    with reproducible(device):
        result = _learn_transforms(models, starts, spec, classes, data, options, torch.device(device), progress,
                                   alternatives)
    result.transforms = [t.to("cpu") for t in result.transforms]  # learned on a GPU, handed back like any other
    return result


def _augmentation(data, options: LearnedOptions, generator: torch.Generator):
    """Gaussian noise on training images (draws from the generator when called), or None."""
    if options.input_noise <= 0:
        return None
    from symalign.data.base import ImageData
    from symalign.data.images import gaussian_noise

    if not isinstance(data, ImageData):
        raise SymalignError(f"--input-noise applies to image data; {data.name} is text (use 0)")
    return gaussian_noise(options.input_noise, generator)


class _Best:
    """The best state the fixed check has seen, and how many checks in a row brought no real gain."""

    def __init__(self, movers: list[Mover], value: float):
        self.value, self.step, self.state, self.stale = value, 0, [m.snapshot() for m in movers], 0

    def offer(self, movers: list[Mover], value: float, step: int, min_delta: float) -> None:
        if value < self.value - min_delta:
            self.stale = 0
        else:
            self.stale += 1
        self.keep(movers, value, step)

    def keep(self, movers: list[Mover], value: float, step: int) -> None:
        if value < self.value:  # a small gain still counts as the best state
            self.value, self.step, self.state = value, step, [m.snapshot() for m in movers]


def _permutation_latents(movers: list[Mover], options: LearnedOptions) -> tuple[list, int]:
    """The permutation latents that train, and the step after which they are frozen. With a freeze at
    step 0 the permutations stay the start's: nothing of theirs is trained or kept."""
    perms = [p for m in movers for p in m.parameters(permutations=True)]
    freeze_step = round(options.freeze_at * options.steps) if perms else 0
    if perms and freeze_step == 0:
        for m in movers:
            m.freeze()
        perms = []
    return perms, freeze_step


def _train_step(objective: PathObjective, movers: list[Mover], weights: list[float], batch, params: list,
                step: int, optimizers: list) -> float:
    """One descent step on the loss at θ(w); returns the loss."""
    for p in params:
        p.grad = None
    loss = objective.loss_at(weights, [m.step_transform() for m in movers], *batch, backward=True).item()
    if not math.isfinite(loss):
        raise SymalignError(f"learned matching diverged at step {step}; lower the learning rate (--lr)")
    for optimizer in optimizers:
        if optimizer is not None:
            optimizer.step()
    return loss


def _learn_transforms(models: list[TransformerModel], starts: list[Transform], spec: SymmetrySpec,
                      classes: dict[str, str], data, options: LearnedOptions, device: torch.device,
                      progress: Progress | None, alternatives: list[list[Transform]] = ()) -> LearnedResult:
    ref = models[0]
    data.check_model(ref)
    generator = torch.Generator().manual_seed(options.seed)
    augment = _augmentation(data, options, generator)
    objective = PathObjective(models, spec, device)
    check_batch = data.train_batch(ref, options.check_examples, torch.Generator().manual_seed(options.seed + 7919))

    points = check_points(len(models), options.check_points)

    def check_of(movers: list[Mover]) -> float:
        return objective.check([m.transform(hard=options.round) for m in movers], check_batch, points)

    chosen, scores = 0, []
    if alternatives:  # several starts offered: the one whose path is lowest on the fixed check
        scores = [check_of([Mover(s, spec, classes, options.soft, generator, device) for s in c])
                  for c in [starts, *alternatives]]
        chosen = min(range(len(scores)), key=scores.__getitem__)
        starts = [starts, *alternatives][chosen]
    movers = [Mover(s, spec, classes, options.soft, generator, device) for s in starts]
    continuous = [p for m in movers for p in m.parameters(permutations=False)]
    if not continuous and not any(m.parameters(permutations=True) for m in movers):
        return LearnedResult([Transform(s) for s in starts], [], {"steps": 0, "stopped": "nothing to learn"})
    options = options.for_problem(bool(continuous))
    perms, freeze_step = _permutation_latents(movers, options)
    optimizer = torch.optim.Adam([{"params": continuous, "lr": options.lr}]) if continuous else None
    perm_optimizer = NormalizedMomentum(perms, options.perm_lr) if perms else None
    sampler = WeightSampler(len(models), options.lambdas, options.alpha, options.seed)

    begin = time.perf_counter()
    start_check = check_of(movers)
    best = _Best(movers, start_check)
    history: list[dict] = [{"step": 0, "check": start_check, "seconds": 0.0}]
    previous = [m.permutations() for m in movers]
    stopped = "reached --steps"
    for step in range(1, options.steps + 1):
        rate = _rate("continuous", step, freeze_step, options)
        if optimizer is not None:
            optimizer.param_groups[0]["lr"] = rate
        if perm_optimizer is not None:
            perm_optimizer.lr = _rate("perm", step, freeze_step, options)
        if step == freeze_step + 1 and perms and freeze_step > 0:
            for m in movers:
                m.freeze()
            if not continuous:  # permutations were all there was to learn: keep the frozen ones if better
                history[-1]["check"] = check_of(movers)
                best.keep(movers, history[-1]["check"], step - 1)
                stopped = "permutations frozen; nothing else to learn"
                break
        weights = sampler()
        batch = data.train_batch(ref, options.batch_size, generator, augment)
        loss = _train_step(objective, movers, weights, batch, continuous + perms, step,
                           [optimizer, perm_optimizer if step <= freeze_step else None])
        current = [m.permutations() for m in movers]
        flips = sum(int((current[i][k] != previous[i][k]).sum()) for i in range(len(movers)) for k in current[i])
        previous = current
        entry = {"step": step, "weights": [round(w, 6) for w in weights], "loss": loss, "flips": flips,
                 "lr": rate if optimizer is not None else perm_optimizer.lr if perm_optimizer else 0.0,
                 "seconds": time.perf_counter() - begin}
        if step % options.check_every == 0 or step == options.steps:
            entry["check"] = check_of(movers)
            best.offer(movers, entry["check"], step, options.min_delta)
        history.append(entry)
        if progress:
            progress(step, options.steps)
        # A stall ends the run only if learning never beat its start (the start is already optimal) or
        # the step size has decayed (converged): earlier, the check plateaus and recovers (measured on
        # vit-digits: stopping there left the evaluation barrier at 0.02–0.12 depending on the seed).
        # Not at the last step: that run reached --steps, and learned_hint reads it (issue #74, docs/matching.md).
        settled = step > freeze_step and (optimizer is None or rate < 0.1 * options.lr)
        if step < options.steps and best.stale >= options.patience and (settled or best.step == 0):
            stopped = f"check stalled for {options.patience} checks"
            break
    for m, state in zip(movers, best.state):
        m.restore(state)
    if progress:
        progress(options.steps, options.steps)
    unrounded = None if options.round or len(models) != 2 else unrounded_tradeoff(objective, movers[0], check_batch)
    summary = {"steps": history[-1]["step"], "best_step": best.step, "start_check": start_check,
               "best_check": best.value, "stopped": stopped, "freeze_step": freeze_step, "start": chosen,
               "start_checks": scores, "seconds": time.perf_counter() - begin, "options": asdict(options),
               "unrounded": unrounded}
    return LearnedResult([m.final() for m in movers], history, summary)


def learned_match(a: TransformerModel, b: TransformerModel, spec: SymmetrySpec, start: Transform,
                  classes: dict[str, str], data, options: LearnedOptions = LearnedOptions(),
                  device: torch.device | str = "cpu", progress: Progress | None = None,
                  alternatives: list[Transform] = ()) -> LearnedResult:
    """Refine `start` (weight matching of B to A), or whichever of `alternatives` has the lower
    check, for low loss along the straight path."""
    return learn_transforms([a, b], [start], spec, classes, data, options, device, progress,
                            [[t] for t in alternatives])


def run_learned_matching(inputs: MatchInputs) -> MatchOutput:
    """The `learned` and `soft` matchers (symalign.match.matchers): weight matching's transform, refined
    on the task loss along the path (`soft`: permutations relaxed by Sinkhorn while they train)."""
    from symalign.data import load_data
    from symalign.match.weight.descent import run_weight_matching

    c = inputs.config
    options = c.learned_options()
    data = load_data(c.data)
    starts = []
    # soft latents start from weight matching's (or, asked for, the identity)
    wanted = "weight" if options.soft and options.start != "identity" else options.start
    begin = start_inputs(inputs)
    if wanted == "identity":
        starts.append(MatchOutput(identity_start(inputs.spec, inputs.classes)))
    if wanted in ("weight", "auto"):
        starts.append(run_weight_matching(begin))
    if wanted in ("activation", "auto"):
        perms = activation_permutation_start(begin, data)
        if perms is not None:
            starts.append(perms)
    if not starts:  # asked for activations' permutations where no permutation is learned
        starts.append(run_weight_matching(begin))
    for s in starts:  # `--layers`: nothing to learn in the other blocks' spaces
        s.transform = Transform({k: v for k, v in s.transform.items() if k not in inputs.frozen})
    result = learned_match(inputs.a, inputs.b, inputs.spec, starts[0].transform, inputs.classes, data, options,
                           device=inputs.device, progress=inputs.progress,
                           alternatives=[s.transform for s in starts[1:]])
    start = starts[result.summary.get("start", 0)]
    from symalign.match.results import LearnedStep, LearnedSummary

    return MatchOutput(result.transforms[0], start.sweeps, [LearnedStep.from_json(h) for h in result.history],
                       LearnedSummary.from_json(result.summary), start.transform)
