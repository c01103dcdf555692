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
from dataclasses import asdict, dataclass, fields, replace

import torch
from torch.func import functional_call

from symalign.device import reproducible
from symalign.errors import SymalignError
from symalign.landscape.evaluate import activation_budget, batch_loss, examples_per_chunk, scored
from symalign.match.latent import LatentElement
from symalign.match.matchers import MatchInputs, MatchOutput
from symalign.match.mixing import WeightSampler, check_points
from symalign.memory import LARGE_MODEL_PARAMETERS
from symalign.models.family import TransformerModel
from symalign.models.functional import functional_params, module_names, weightless_module
from symalign.symmetry.groups import Dense, GroupElement, Permutation
from symalign.symmetry.spec import SymmetrySpec
from symalign.symmetry.transform import Transform, apply_unchecked

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class LearnedOptions:
    steps: int = 300  # at most; AlignConfig fills the data's default (600 images, 300 text)
    lr: float = 0.01
    perm_lr: float | None = None  # None: 0.1 beside continuous maps, 2.0 when permutations are all there is
    batch_size: int = 64
    lambdas: str = "uniform_mid"  # pairs: the distribution of λ per step
    alpha: float = 1.0  # N ≥ 3 models: Dirichlet(α·1) mixing weights per step (1: uniform on the simplex)
    seed: int = 0
    soft: bool = False
    check_every: int = 25
    patience: int = 3
    min_delta: float = 1e-3
    freeze_at: float | None = None  # None: 0 (weight matching's) beside continuous maps (soft: 0.5); 0.9 alone
    check_examples: int = 128
    input_noise: float = 0.0  # std of Gaussian noise added to training images (AlignConfig: 0.3 for images)
    start: str = "weight"  # weight | activation (permutations from activations, the rest by weight
    # matching around them) | auto (both; learning begins from the one whose path is lower on the check)

    def __post_init__(self) -> None:
        if self.steps < 1:
            raise SymalignError(f"--steps must be at least 1; got {self.steps}")
        if not (self.lr > 0 and (self.perm_lr is None or self.perm_lr > 0)):
            raise SymalignError("learning rates must be positive")
        if self.freeze_at is not None and not 0 <= self.freeze_at <= 1:
            raise SymalignError(f"freeze_at is a fraction of the steps in [0, 1]; got {self.freeze_at}")
        if not (self.input_noise >= 0 and math.isfinite(self.input_noise)):
            raise SymalignError(f"--input-noise must be 0 or more; got {self.input_noise}")
        if self.batch_size < 1 or self.check_examples < 1 or self.check_every < 1 or self.patience < 1:
            raise SymalignError("batch size, check size, check interval and patience must be at least 1")

    def for_problem(self, continuous: bool) -> LearnedOptions:
        """Fill the permutation settings from what is learned. Measured on both zoo families: beside
        learned rotations, permutation flips make the objective worse (the rotations absorb small
        mismatches smoothly; gpt-shakespeare 0↔1: barrier 0.046 with weight matching's permutations
        kept, 0.047 with flips until half-way, whose timing also depended on round-off), so hard
        permutations stay fixed; soft ones relax until half-way, which is what soft matching is for.
        When permutations are all there is to learn, flips are the only lever (large step, most of
        the run)."""
        freeze = 0.5 if self.soft else 0.0
        return replace(self, perm_lr=self.perm_lr if self.perm_lr is not None else (0.1 if continuous else 2.0),
                       freeze_at=self.freeze_at if self.freeze_at is not None else (freeze if continuous else 0.9))


@dataclass
class LearnedResult:
    transforms: list[Transform]  # one per model after the first
    history: list[dict]  # per step: weights, loss, permutation flips, learning rate, check value
    summary: dict  # steps run, best step, best and starting check values, why it stopped


def _cosine(step: int, total: int) -> float:
    return 0.5 * (1.0 + math.cos(math.pi * min(step, total) / max(total, 1)))


def _rate(group: str, step: int, freeze_step: int, options: LearnedOptions) -> float:
    """Cosine decay over the run; permutations decay faster, reaching 0 at the freeze."""
    if group == "perm":
        return options.perm_lr * _cosine(step - 1, freeze_step)
    return options.lr * _cosine(step - 1, options.steps)


class NormalizedMomentum:
    """The update for permutation latents: momentum on each latent's gradient divided by its largest
    entry. Adam would move every entry of Z by about the step size whatever its gradient, so entries
    with tiny, noisy gradients would flip units as readily as informative ones (measured: 70% of MLP
    units moved, and a worse barrier); scaled per tensor, the strongest consistent entries move by
    `lr` per step and the rest in proportion to their evidence."""

    def __init__(self, params: list[torch.nn.Parameter], lr: float, momentum: float = 0.9):
        self.params, self.lr, self.momentum = params, lr, momentum
        self.buffers = [torch.zeros_like(p) for p in params]

    @torch.no_grad()
    def step(self) -> None:
        for p, buf in zip(self.params, self.buffers):
            if p.grad is None:
                continue
            g = p.grad / p.grad.abs().max().clamp_min(1e-30)
            buf.mul_(self.momentum).add_(g, alpha=1 - self.momentum)
            p.sub_(self.lr * buf)


class _Mover:
    """One model's latent transform, assembled the same way for training, checks and output."""

    def __init__(self, start: Transform, spec: SymmetrySpec, classes: dict[str, str], soft: bool,
                 generator: torch.Generator, device: torch.device):
        self.spec = spec
        self.latents = {name: LatentElement(el, classes[spec.spaces[name].kind], spec.spaces[name].fixes_ones,
                                            soft, generator, spec.spaces[name].rotated).to(device)
                        for name, el in start.items()}
        # per-head maps are learned per *B head*: when a head permutation moves, its maps move with it
        self.start_inverse = {name: torch.argsort(el.perm).to(device) for name, el in start.items()
                              if isinstance(el, Permutation)}

    def parameters(self, permutations: bool) -> list[torch.nn.Parameter]:
        out = [l.p for l in self.latents.values() if l.trainable and l.is_permutation == permutations]
        if not permutations:  # partial rotary: the unrotated blocks' latents train with the rest
            out += [l.free for l in self.latents.values() if l.free is not None]
        return out

    def permutations(self) -> dict[str, torch.Tensor]:
        return {name: l.hard_perm() for name, l in self.latents.items() if l.is_permutation}

    def transform(self, hard: bool) -> Transform:
        out = Transform()
        for name, latent in self.latents.items():
            out[name] = Permutation(latent.hard_perm()) if hard and latent.is_permutation else latent.element()
        for name in out:
            parent = self.latents.get(self.spec.spaces[name].batched_by or "")
            if parent is not None and parent.is_permutation and (hard or not parent.soft or parent.frozen):
                order = self.start_inverse[self.spec.spaces[name].batched_by][parent.hard_perm()]
                out[name] = out[name].select(order)
        return out

    def final(self) -> Transform:
        out = self.transform(hard=True)
        return Transform({name: el if isinstance(el, Permutation) else _detached(el) for name, el in out.items()})

    def freeze(self) -> None:
        for latent in self.latents.values():
            latent.freeze()

    def snapshot(self) -> dict:
        return {name: l.snapshot() for name, l in self.latents.items()}

    def restore(self, state: dict) -> None:
        for name, l in self.latents.items():
            l.restore(state[name])


def _single(transform: Transform) -> Transform:
    """Orthogonal, invertible and permutation matrices in float32 for a training step (float64 costs
    16% of a step and buys nothing there); checks and the output keep float64."""
    return Transform({name: Dense(el.matrix.float(), el.kind) if isinstance(el, Dense) and el.kind in ("orthogonal",
                                                                                                       "perm",
                                                                                                       "invertible")
                      else el for name, el in transform.items()})


def _detached(element: GroupElement) -> GroupElement:
    if isinstance(element, Dense):
        return Dense(element.matrix.detach().cpu().clone(), element.kind)
    return element


def _cut(transforms: list[Transform], cuts: list[tuple[torch.Tensor, torch.Tensor]]) -> list[Transform]:
    """The transforms with every tensor that carries a gradient replaced by a detached leaf copy;
    (tensor, leaf) pairs are appended to `cuts`, so the leaves' gradients can be carried on into
    the latents in one backward pass once every parameter has given its share."""
    out = []
    for transform in transforms:
        cut = Transform()
        for name, element in transform.items():
            leaves = {}
            for f in fields(element):
                value = getattr(element, f.name)
                if isinstance(value, torch.Tensor) and value.requires_grad:
                    leaves[f.name] = value.detach().requires_grad_()
                    cuts.append((value, leaves[f.name]))
            cut[name] = replace(element, **leaves) if leaves else element
        out.append(cut)
    return out


def _backward_per_tensor(params: dict[str, torch.Tensor], leaves: dict[str, torch.Tensor],
                         cuts: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
    """Carry the gradients gathered on `leaves` (detached copies of `params`) back through the
    transforms, one parameter at a time (each one's graph and buffers freed as it goes), into the
    cut matrices, then from those into the latents."""
    for name in list(params):
        param, leaf = params.pop(name), leaves.pop(name)
        if param.requires_grad and leaf.grad is not None:
            torch.autograd.backward(param, leaf.grad)
        del param, leaf
    reached = [(tensor, leaf) for tensor, leaf in cuts if leaf.grad is not None]
    if reached:
        torch.autograd.backward([t for t, _ in reached], [leaf.grad for _, leaf in reached])


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


def _learn_transforms(models: list[TransformerModel], starts: list[Transform], spec: SymmetrySpec,
                      classes: dict[str, str], data, options: LearnedOptions, device: torch.device,
                      progress: Progress | None, alternatives: list[list[Transform]] = ()) -> LearnedResult:
    ref = models[0]
    data.check_model(ref)
    generator = torch.Generator().manual_seed(options.seed)
    augment = None
    if options.input_noise > 0:
        from symalign.data.base import ImageData
        from symalign.data.images import gaussian_noise

        if not isinstance(data, ImageData):
            raise SymalignError(f"--input-noise applies to image data; {data.name} is text (use 0)")
        augment = gaussian_noise(options.input_noise, generator)  # draws from the generator when called
    module = weightless_module(ref).to(device)
    names = module_names(module)
    tensors = [{k: v.to(device) for k, v in m.tensors.items()} for m in models]
    budget = activation_budget(ref, device)  # once, with the models in place
    large = sum(t.numel() for t in ref.tensors.values()) > LARGE_MODEL_PARAMETERS  # the zoo keeps its layout
    check_gen = torch.Generator().manual_seed(options.seed + 7919)
    check_batch = data.train_batch(ref, options.check_examples, check_gen)

    def mixed_params(weights: list[float], transforms: list[Transform]) -> dict[str, torch.Tensor]:
        """θ(w) = Σ w_i T_i(θ_i) as the Hugging Face parameters (differentiable in the transforms)."""
        moved = [apply_unchecked(t, spec, tr) for t, tr in zip(tensors[1:], transforms)]
        mixed = {}
        for k in tensors[0]:
            terms = [m.pop(k) for m in moved]  # each moved tensor is let go as soon as it is summed
            first = terms[0]
            if first.untyped_storage().data_ptr() == tensors[1][k].untyped_storage().data_ptr():
                first = weights[1] * first  # no transform touched it: B's own tensor, never written to
            else:
                first.mul_(weights[1])  # a fresh tensor: the sum is built in it (no third model-sized set)
            # w_1·T(B_1) + w_0·A equals w_0·A + w_1·T(B_1) bitwise (addition commutes), and so on in order:
            # the same numbers as summing out of place
            total = first.add_(weights[0] * tensors[0][k])
            for w, term in zip(weights[2:], terms[1:]):
                total = total.add_(w * term)
            mixed[k] = total
        return functional_params(ref.family, ref.config, mixed, names, contiguous=not large)

    def summed_loss(params: dict[str, torch.Tensor], inputs, y) -> torch.Tensor:
        kwargs = {k: v.to(device) for k, v in inputs.items()}
        logits = functional_call(module, params, args=(), kwargs=kwargs).logits
        y = y.to(device)
        total, _ = batch_loss(logits[:, : y.shape[1]] if y.dim() == 2 else logits, y)
        return total

    def loss_at(weights: list[float], transforms: list[Transform], inputs, y, backward: bool = False) -> torch.Tensor:
        """Mean loss on the batch (and its gradient when `backward`). A batch whose activations
        would exceed the budget (a real vocabulary's logits) runs in micro-batches: θ(w) is built
        once, each micro-batch's gradient is accumulated on a detached copy of it, and the sum is
        then carried back through the transforms. A batch that fits is one pass, as it always
        was. The backward pass through the transforms runs one parameter at a time, into
        the transforms' matrices cut loose as leaves (`_cut`), and then once from those matrices into
        the latents: each parameter's mixed tensor, gradient and saved products are let go as soon
        as its share is taken, instead of all of them living until one backward over the whole
        model ends (GPT-2-small: the step's peak)."""
        count = max(scored(y), 1)
        size = examples_per_chunk(ref, inputs, budget)
        if size >= len(y):
            loss = summed_loss(mixed_params(weights, transforms), inputs, y) / count
            if backward:
                loss.backward()
            return loss
        cuts: list[tuple[torch.Tensor, torch.Tensor]] = []
        params = mixed_params(weights, _cut(transforms, cuts) if backward else transforms)
        leaves = {k: v.detach().requires_grad_(backward) for k, v in params.items()}
        value = torch.zeros(())
        for i in range(0, len(y), size):
            part = summed_loss(leaves, {k: v[i:i + size] for k, v in inputs.items()}, y[i:i + size]) / count
            if backward:
                part.backward()
            value = value + part.detach().cpu()
        if backward:
            _backward_per_tensor(params, leaves, cuts)
        return value

    points = check_points(len(models))

    @torch.no_grad()
    def check_of(movers: list[_Mover]) -> float:
        transforms = [m.transform(hard=True) for m in movers]
        return sum(float(loss_at(w, transforms, *check_batch)) for w in points) / len(points)

    chosen, scores = 0, []
    if alternatives:  # several starts offered: the one whose path is lowest on the fixed check
        scores = [check_of([_Mover(s, spec, classes, options.soft, generator, device) for s in c])
                  for c in [starts, *alternatives]]
        chosen = min(range(len(scores)), key=scores.__getitem__)
        starts = [starts, *alternatives][chosen]
    movers = [_Mover(s, spec, classes, options.soft, generator, device) for s in starts]
    continuous = [p for m in movers for p in m.parameters(permutations=False)]
    perms = [p for m in movers for p in m.parameters(permutations=True)]
    options = options.for_problem(bool(continuous))
    if not continuous and not perms:
        return LearnedResult([Transform(s) for s in starts], [], {"steps": 0, "stopped": "nothing to learn"})
    groups = ([{"params": continuous, "lr": options.lr, "name": "continuous"}] if continuous else [])
    optimizer = torch.optim.Adam(groups) if continuous else None
    sampler = WeightSampler(len(models), options.lambdas, options.alpha, options.seed)
    freeze_step = round(options.freeze_at * options.steps) if perms else 0
    if perms and freeze_step == 0:  # permutations stay the start's: nothing of theirs is trained or kept
        for m in movers:
            m.freeze()
        perms = []
    perm_optimizer = NormalizedMomentum(perms, options.perm_lr) if perms else None

    def check() -> float:
        return check_of(movers)

    begin = time.perf_counter()
    start_check = best_check = check()
    best_step, best_state, stale = 0, [m.snapshot() for m in movers], 0
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
                value = check()
                history[-1]["check"] = value
                if value < best_check:
                    best_check, best_step, best_state = value, step - 1, [m.snapshot() for m in movers]
                stopped = "permutations frozen; nothing else to learn"
                break
        weights = sampler()
        inputs, y = data.train_batch(ref, options.batch_size, generator, augment)
        for p in continuous + perms:
            p.grad = None
        loss = loss_at(weights, [_single(m.transform(hard=False)) for m in movers], inputs, y, backward=True)
        if not math.isfinite(loss.item()):
            raise SymalignError(f"learned matching diverged at step {step}; lower the learning rate (--lr)")
        if optimizer is not None:
            optimizer.step()
        if perm_optimizer is not None and step <= freeze_step:
            perm_optimizer.step()
        current = [m.permutations() for m in movers]
        flips = sum(int((current[i][k] != previous[i][k]).sum()) for i in range(len(movers)) for k in current[i])
        previous = current
        entry = {"step": step, "weights": [round(w, 6) for w in weights], "loss": loss.item(), "flips": flips,
                 "lr": rate if optimizer is not None else perm_optimizer.lr if perm_optimizer else 0.0,
                 "seconds": time.perf_counter() - begin}
        if step % options.check_every == 0 or step == options.steps:
            value = check()
            entry["check"] = value
            if value < best_check - options.min_delta:
                best_check, best_step, best_state, stale = value, step, [m.snapshot() for m in movers], 0
            else:
                if value < best_check:  # a small gain still counts as the best state
                    best_check, best_step, best_state = value, step, [m.snapshot() for m in movers]
                stale += 1
        history.append(entry)
        if progress:
            progress(step, options.steps)
        # A stall ends the run only if learning never beat its start (the start is already optimal) or
        # the step size has decayed (converged): earlier, the check plateaus and recovers (measured on
        # vit-digits: stopping there left the evaluation barrier at 0.02–0.12 depending on the seed).
        settled = step > freeze_step and (optimizer is None or rate < 0.1 * options.lr)
        if stale >= options.patience and (settled or best_step == 0):
            stopped = f"check stalled for {options.patience} checks"
            break
    for m, state in zip(movers, best_state):
        m.restore(state)
    if progress:
        progress(options.steps, options.steps)
    summary = {"steps": history[-1]["step"], "best_step": best_step, "start_check": start_check,
               "best_check": best_check, "stopped": stopped, "freeze_step": freeze_step, "start": chosen,
               "start_checks": scores,
               "seconds": time.perf_counter() - begin, "options": asdict(options)}
    return LearnedResult([m.final() for m in movers], history, summary)


def learned_match(a: TransformerModel, b: TransformerModel, spec: SymmetrySpec, start: Transform,
                  classes: dict[str, str], data, options: LearnedOptions = LearnedOptions(),
                  device: torch.device | str = "cpu", progress: Progress | None = None,
                  alternatives: list[Transform] = ()) -> LearnedResult:
    """Refine `start` (weight matching of B to A), or whichever of `alternatives` has the lower
    check, for low loss along the straight path."""
    return learn_transforms([a, b], [start], spec, classes, data, options, device, progress,
                            [[t] for t in alternatives])


def activation_permutation_start(inputs: MatchInputs, data) -> MatchOutput | None:
    """A start whose MLP and head permutations come from activations (units paired by the
    correlation of what they compute, which no residual basis changes) and whose continuous maps
    are solved by weight matching around them. None when no permutation is asked for."""
    from symalign.match.activation import activation_match
    from symalign.match.weight import boundary_tensors, weight_match

    c = inputs.config
    perms = {k: v for k, v in inputs.classes.items() if k in ("mlp", "heads") and v == "perm"}
    if not perms:
        return None
    init = activation_match(inputs.a, inputs.b, inputs.spec, perms, data, c.residual_strategy, c.head_strategy,
                            c.max_examples, device=inputs.device)
    fixed = frozenset(n for n in init if inputs.spec.spaces[n].kind in ("mlp", "heads"))
    transform, sweeps = weight_match(inputs.a.tensors, inputs.b.tensors, inputs.spec, inputs.classes,
                                     boundary_tensors(inputs.a), c.head_cost, c.max_sweeps, c.seed,
                                     device=inputs.device, init=init, fixed=fixed)
    return MatchOutput(transform, sweeps=sweeps)


# Where learning starts for a class whose own weight matching is a poor start: the closed form of a
# subgroup. Weight matching fits invertible head maps by least squares, which brings B's weights close
# to A's through ill-conditioned maps; learning from there ended at 0.048 on gpt2-prose, from the
# rotations (Procrustes) at 0.013 (docs/matching.md, issue #29). Learning then leaves the subgroup.
START_CLASSES = {"invertible": "orthogonal"}


def start_classes(classes: dict[str, str], spec: SymmetrySpec) -> dict[str, str]:
    """The classes of the matching learning starts from: each replaced by its START_CLASSES stand-in
    where every space of that kind admits it."""
    out = {}
    for kind, cls in classes.items():
        stand_in = START_CLASSES.get(cls)
        spaces = spec.spaces_of_kind(kind)
        out[kind] = stand_in if stand_in and spaces and all(s.admits(stand_in) for s in spaces) else cls
    return out


def start_inputs(inputs: MatchInputs) -> MatchInputs:
    """The inputs of the weight matching learning starts from (`start_classes`). It gets no progress
    of its own (it would reset the bar), and B is not handed to it: learning still reads B."""
    return replace(inputs, classes=start_classes(inputs.classes, inputs.spec), progress=None, own_b=False)


def run_learned_matching(inputs: MatchInputs) -> MatchOutput:
    """The `learned` and `soft` matchers (symalign.match.matchers): weight matching's transform, refined
    on the task loss along the path (`soft`: permutations relaxed by Sinkhorn while they train)."""
    from symalign.data import load_data
    from symalign.match.weight import run_weight_matching

    c = inputs.config
    options = c.learned_options()
    data = load_data(c.data)
    starts = []
    wanted = "weight" if options.soft else options.start  # soft latents start from weight matching's
    begin = start_inputs(inputs)
    if wanted in ("weight", "auto"):
        starts.append(run_weight_matching(begin))
    if wanted in ("activation", "auto"):
        perms = activation_permutation_start(begin, data)
        if perms is not None:
            starts.append(perms)
    if not starts:  # asked for activations' permutations where no permutation is learned
        starts.append(run_weight_matching(begin))
    result = learned_match(inputs.a, inputs.b, inputs.spec, starts[0].transform, inputs.classes, data, options,
                           device=inputs.device, progress=inputs.progress,
                           alternatives=[s.transform for s in starts[1:]])
    start = starts[result.summary.get("start", 0)]
    return MatchOutput(result.transforms[0], start.sweeps, result.history, result.summary, start.transform)
