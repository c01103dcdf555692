"""Loss along the straight line θ(λ) = (1−λ)θ_A + λθ_B, and the barrier on it.

Endpoints are first brought into the same form: by default both canonical (LayerNorms folded,
LM head untied), which is function-preserving for each, so a model in canonical form (a
matcher's output) and one as trained are interpolated in one consistent parametrisation."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import torch

from symalign.errors import SymalignError
from symalign.landscape.evaluate import Evaluator
from symalign.landscape.pseudo_perplexity import PseudoPerplexity, scores_pseudo_perplexity
from symalign.memory import LARGE_MODEL_PARAMETERS
from symalign.models import canonicalize
from symalign.models.family import TransformerModel
from symalign.models.finite import require_finite
from symalign.models.functional import functional_params
from symalign.models.widen import match_widths

Progress = Callable[[int, int], None]


@dataclass
class Curve:
    lambdas: list[float]
    loss: list[float]
    accuracy: list[float]
    barrier: float
    barrier_mean: float
    endpoint_loss: list[float]
    endpoint_accuracy: list[float]
    examples: int
    form: str
    # The largest drop of accuracy below the straight line between the endpoints' accuracies (and below
    # their mean), in percentage points: what LMC papers and merging users quote first (`accuracy_barriers`).
    accuracy_barrier: float = float("nan")
    accuracy_barrier_mean: float = float("nan")
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.accuracy and math.isnan(self.accuracy_barrier):
            self.accuracy_barrier, self.accuracy_barrier_mean = accuracy_barriers(self.lambdas, self.accuracy)

    def to_json(self) -> dict:
        out = asdict(self)
        out.update(out.pop("extra"))
        return out


def barriers(lambdas: list[float], loss: list[float]) -> tuple[float, float]:
    """(max over λ of L(λ) − linear interpolation of the endpoint losses, max L − mean endpoint loss)."""
    la, lb = loss[0], loss[-1]
    primary = max(l - ((1 - t) * la + t * lb) for t, l in zip(lambdas, loss))
    return primary, max(loss) - 0.5 * (la + lb)


def accuracy_barriers(lambdas: list[float], accuracy: list[float]) -> tuple[float, float]:
    """(max over λ of the linear interpolation of the endpoint accuracies − acc(λ), mean endpoint
    accuracy − min acc), in percentage points (accuracies are fractions: top-1 for classifiers, next-
    or masked-token accuracy for language models): `barriers` of the accuracy's negative, in points."""
    return barriers(lambdas, [-100 * acc for acc in accuracy])


def same_forms(models: list[TransformerModel], form: str, consume: bool = False) -> list[TransformerModel]:
    """The models in one parametrisation: all canonical (default), or raw if they agree on it.
    `consume`: the caller hands the models over (canonicalize lets each raw tensor go once read)."""
    if form == "canonical":
        return [canonicalize(m, consume=consume) for m in models]
    if form == "raw":
        tie = lambda m: (getattr(m.config, "tie_word_embeddings", None), getattr(m.config, "qkv_bias", None))
        if len({tie(m) for m in models}) > 1:
            raise SymalignError("the endpoints are in different forms (tied/untied head or q/k/v biases); "
                                "interpolate in canonical form instead")
        return list(models)
    raise SymalignError(f"unknown form {form!r}; choose canonical or raw")


def check_points(points: int) -> None:
    """A curve needs its two endpoints: said before any work (an alignment measured afterwards included)."""
    if not isinstance(points, (int, float)) or points != int(points):
        raise SymalignError(f"--points takes a whole number; got {points!r}")
    if points < 2:
        raise SymalignError("--points must be at least 2 (the two endpoints)")


def interpolation_curve(a: TransformerModel, b: TransformerModel, data, points: int = 21,
                        max_examples: int | None = None, device: str | torch.device = "cpu",
                        form: str = "canonical", progress: Progress | None = None,
                        consume: tuple[bool, bool] = (False, False)) -> Curve:
    """Loss and accuracy at `points` evenly spaced λ in [0, 1] (endpoints included).

    `consume` (per endpoint): the caller hands that model over and holds no other reference (a
    workflow that loaded it from disk). A real checkpoint's raw tensors then go as they are folded,
    and its parameters are walked in place in the model's own memory instead of a copy of it."""
    check_points(points)
    for role, model in (("endpoint A", a), ("endpoint B", b)):
        require_finite(model, role)
    a, b, widths = match_widths(a, b)  # models of different widths: the narrower one embedded, same function
    if widths and form != "canonical":
        raise SymalignError("models of different widths are interpolated in canonical form (the embedding of the "
                            "narrower one is canonical); use --form canonical")
    if form == "raw":
        same_forms([a, b], form)  # refuses endpoints in different forms
    # One endpoint at a time: its canonical form, then its parameters; a caller that handed the
    # models over (measured_curve) holds nothing else, so the peak is two parameter sets and a buffer.
    a = same_forms([a], form, consume[0])[0]
    evaluator = Evaluator(a, data, max_examples, device)
    pppl = PseudoPerplexity(evaluator.module, a, data, device=evaluator.device) if scores_pseudo_perplexity(a, data) \
        else None
    walk = sum(t.numel() for t in a.tensors.values()) > LARGE_MODEL_PARAMETERS
    pa = _walk_params(evaluator, a, consume[0]) if walk else evaluator.hf_params(a)
    del a
    b = same_forms([b], form, consume[1])[0]
    pb = _walk_params(evaluator, b, consume[1]) if walk else evaluator.hf_params(b)
    del b
    lambdas = [i / (points - 1) for i in range(points)]
    if walk:  # a real checkpoint: no third parameter set (4 bytes per parameter), see _walk
        params = pa
        steps = _walk(pa, pb, lambdas)
    else:
        params = {k: torch.empty_like(v) for k, v in pa.items()}  # one buffer, refilled at each λ
    losses, accs, pseudo = [], [], []
    total, done = points * len(evaluator.batches), [0]

    def tick() -> None:  # per batch: a real checkpoint's first point takes minutes on a CPU
        done[0] += 1
        progress(done[0], total)

    if progress:
        progress(0, total)
    for lam in lambdas:
        if walk:
            next(steps)
        else:
            for k in pa:
                torch.lerp(pa[k], pb[k], lam, out=params[k])
        m = evaluator(params, tick if progress else None)
        if not torch.isfinite(torch.tensor(m.loss)):
            raise SymalignError(f"the loss is not finite at λ = {lam:.2f}: a model holds NaN or infinite weights")
        losses.append(m.loss)
        accs.append(m.accuracy)
        if pppl:
            pseudo.append(pppl(params))
    primary, mean = barriers(lambdas, losses)
    curve = Curve(lambdas, losses, accs, primary, mean, [losses[0], losses[-1]], [accs[0], accs[-1]],
                  evaluator.examples, form)
    if pppl:
        curve.extra.update(pseudo_perplexity_extra(lambdas, pseudo, pppl.tokens))
    return curve


def pseudo_perplexity_extra(lambdas: list[float], pseudo: list[float], tokens: int) -> dict:
    """A masked LM's curve in pseudo-perplexity (Salazar et al.'s, every position masked): at each λ and its barrier."""
    primary, mean = barriers(lambdas, pseudo)
    return {"pseudo_perplexity": pseudo, "pseudo_perplexity_barrier": primary,
            "pseudo_perplexity_barrier_mean": mean, "pseudo_perplexity_tokens": tokens}


def _walk_params(evaluator: Evaluator, model: TransformerModel, consumed: bool) -> dict[str, torch.Tensor]:
    """Parameters that _walk may change in place: a consumed model's own tensors (in its layout's
    views: no copy at all), else copies of whatever the model shares with its parameters."""
    if consumed:
        params = functional_params(model.family, model.config, model.tensors, evaluator.names, contiguous=False)
        return {k: v.to(evaluator.device) for k, v in params.items()}
    return _owned(evaluator.hf_params(model), model)


def _owned(params: dict[str, torch.Tensor], model: TransformerModel) -> dict[str, torch.Tensor]:
    """`params` with every tensor that shares memory with the model's own tensors copied, so that
    walking them in place (_walk) can never change a model a caller still holds."""
    theirs = {t.untyped_storage().data_ptr() for t in model.tensors.values()}
    return {k: v.clone() if v.untyped_storage().data_ptr() in theirs else v for k, v in params.items()}


def _walk(pa: dict[str, torch.Tensor], pb: dict[str, torch.Tensor], lambdas: list[float]):
    """Turn `pa` into θ(λ) for each λ in turn, in place: pb becomes the direction θ_B − θ_A and pa
    takes steps of Δλ along it. No buffer beside the two endpoints; the price is float32 rounding
    that accumulates over the steps (about 1e-7 relative per step: far below what a loss shows)."""
    seen: set[int] = set()
    for k in pa:  # a tied parameter appears once per name, but is one tensor: step it once
        if id(pa[k]) not in seen:
            seen.add(id(pa[k]))
            pb[k].sub_(pa[k])
    at = 0.0
    for lam in lambdas:
        seen.clear()
        for k in pa:
            if id(pa[k]) not in seen:
                seen.add(id(pa[k]))
                pa[k].add_(pb[k], alpha=lam - at)
        at = lam
        yield lam
