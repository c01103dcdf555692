"""Optimal-transport fusion, the field's baseline (Singh & Jaggi 2020; Imfeld et al. 2024 for
transformers; Zhang et al.'s OT-ACTS and OT-WTS): B's units are carried onto A's by transport plans
and the two are then merged (averaged), so a merge rule sees them in one basis.

Why it is not a matcher: a transport plan is a soft correspondence. With exact EMD between equal
widths and uniform marginals the plan is a permutation divided by n (OT then reduces to a
permutation matcher, and identical models fuse to themselves); with Sinkhorn it is a blur, and B
carried by it is no longer B's function. So OT lives here, as a way to *merge*, and its transported
B is measured as what it is.

How, in symalign's spaces (the symmetry spec names every unit a plan acts on):
- plans: POT's `ot.emd` or `ot.sinkhorn`, uniform marginals, ground metric the Euclidean distance
  between unit features normalised by its maximum (Imfeld et al.'s defaults: `norm: max`);
- a plan T (A's units × B's) acts on B as M = T / T·1 (each A unit the barycentre of the B units it
  receives): on an output axis M·W, on an input axis W·Mᵀ, on a LayerNorm gain M·γ;
- `ot-acts`: unit features are standardised activations on the data (residual: every hidden state,
  as Imfeld et al.'s shared residual plan; MLP: the down projection's inputs; inside heads: q and k
  together for QK, the head outputs for VO);
- `ot-wts`: one pass in layer order, each space's features are the weights that touch it with the
  spaces before it already carried (the residual first, from the embedding and head rows alone);
- heads are matched whole first (exact: a permutation, by the activation or circuit similarity
  symalign's matchers use), then the dimensions inside each matched head are transported.
Differences from Imfeld et al.'s code, said so that a comparison is fair: one residual plan for the
whole stream (theirs propagates a plan through each residual addition, `resid_policy: mean`), heads
kept whole (theirs transports the concatenated heads' dimensions) and no PCA of activations."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from symalign.errors import SymalignError
from symalign.match.activation.capture import residual_keys
from symalign.match.activation.moments import PairMoments, pair_moments, paired, two_stage
from symalign.match.solvers import assignment, slices
from symalign.match.weight.descent import boundary_tensors
from symalign.match.weight.units import head_cost
from symalign.merge.merge_rule import OT_ALIGNS, MergeInputs, average
from symalign.merge.merge_rule import OT_SOLVERS as SOLVERS
from symalign.models import canonicalize, spec_of
from symalign.models.compat import fine_tune_tensors
from symalign.models.family import TransformerModel
from symalign.symmetry.groups import Dense, GroupElement, Permutation, _along
from symalign.symmetry.spec import SymmetrySpec
from symalign.symmetry.transform import Transform, apply_unchecked

# Examples OT-ACTS reads activations on when none are given. Its distances come from statistics summed batch by
# batch (symalign.match.activation.moments), so the examples cost time, not memory; MAX_ROWS positions bound both.
ACTIVATION_EXAMPLES = 256
DEFAULT_REG = {"ot-acts": 0.08, "ot-wts": 0.06}  # Imfeld et al.'s tuned Sinkhorn strengths (their ViT config)


@dataclass(frozen=True)
class OTSettings:
    """How plans are solved: exact EMD (default: equal widths give permutations) or entropic Sinkhorn
    with strength `reg` relative to the max-normalised ground metric (None: Imfeld et al.'s value)."""

    solver: str = "emd"
    reg: float | None = None

    def strength(self, how_align: str) -> float:
        """Sinkhorn's strength: the one asked for, else Imfeld et al.'s for the method."""
        return self.reg or DEFAULT_REG[how_align]

    def check(self) -> None:
        if self.solver not in SOLVERS:
            raise SymalignError(f"unknown OT solver {self.solver!r}; choose {' or '.join(SOLVERS)}")
        if self.reg is not None and not self.reg > 0:
            raise SymalignError(f"the Sinkhorn strength must be positive (got {self.reg:g})")


@dataclass(frozen=True)
class Transport(Dense):
    """A barycentric map M (rows: A's units; each row a distribution over B's), optionally one per
    head. Unlike a group element it acts the same way on every axis (a soft plan has no inverse to
    give input axes, and OT fusion carries inputs by the plan itself, as for a permutation)."""

    matrix: torch.Tensor
    kind: str = "transport"

    def act(self, t, axis, variance, batch_axis=None):
        return _along(t, axis, self.matrix.to(t.device), batch_axis)

    def inverse(self):
        raise TypeError("a transport plan has no inverse")

    def select(self, index):
        return Transport(self.matrix[index])


def plan(cost: torch.Tensor, settings: OTSettings, reg: float) -> torch.Tensor:
    """The transport plan [n_a, n_b] between uniform marginals for a ground cost (POT); `reg`: the
    Sinkhorn strength (OTSettings.strength), unused by exact EMD."""
    import ot

    c = cost.detach().cpu().double().numpy()
    c = c / max(float(c.max()), 1e-12)
    n_a, n_b = c.shape
    a, b = np.full(n_a, 1.0 / n_a), np.full(n_b, 1.0 / n_b)
    if settings.solver == "emd":
        # POT's default budget (100,000 pivots) stops a 3072² plan (a GPT-2-small MLP) short of optimal, where
        # it is no longer a permutation; a budget of n_a·n_b pivots reaches it (3 s there)
        t, log = ot.emd(a, b, c, numItermax=max(100_000, n_a * n_b), log=True)
        if log["warning"] is not None:
            raise SymalignError(f"exact OT did not reach its optimum on a {n_a}×{n_b} plan ({log['warning']}); "
                                "use --ot-solver sinkhorn")
    else:
        t = ot.sinkhorn(a, b, c, reg, numItermax=10_000, stopThr=1e-10)
    if not np.isfinite(t).all():
        raise SymalignError(f"the Sinkhorn plan did not converge (reg {reg:g}); raise --ot-reg")
    return torch.as_tensor(t)


def barycentric(t: torch.Tensor) -> torch.Tensor:
    """M = T / T·1: A's unit i as the weighted mean of the B units its row sends it."""
    return t / t.sum(1, keepdim=True).clamp_min(1e-300)


def distances(fa: torch.Tensor, fb: torch.Tensor) -> torch.Tensor:
    """Euclidean distances between the rows of fa [n, d] and fb [m, d]."""
    return torch.cdist(fa.double(), fb.double())


def _distance_plan(d: torch.Tensor, settings: OTSettings, reg: float) -> Transport:
    return Transport(barycentric(plan(d, settings, reg)))


def _space_plan(fa: torch.Tensor, fb: torch.Tensor, settings: OTSettings, reg: float) -> Transport:
    return _distance_plan(distances(fa, fb), settings, reg)


def _head_plans(fa: torch.Tensor, fb: torch.Tensor, settings: OTSettings, reg: float) -> Transport:
    """One plan per head: fa, fb [H, n, d] features of each head's units."""
    return _head_distance_plans(torch.stack([distances(x, y) for x, y in zip(fa, fb)]), settings, reg)


def _head_distance_plans(d: torch.Tensor, settings: OTSettings, reg: float) -> Transport:
    """One plan per head from its [H, n, n] distances."""
    return Transport(torch.stack([barycentric(plan(x, settings, reg)) for x in d]))


def check_fusable(model: TransformerModel, spec: SymmetrySpec | None = None) -> None:
    """OT fusion mixes dimensions inside a head and treats heads one to one: refuse what breaks either
    (before any work: `spec` defaults to the family's canonical spec, read from the config alone)."""
    spec = spec or model.family.spec(model.config, canonical=True)
    if model.dims.kv_heads != model.dims.n_head:
        raise SymalignError(f"OT fusion does not support grouped-query attention ({model.family.name}: "
                            f"{model.dims.kv_heads} key/value heads for {model.dims.n_head} query heads); "
                            "use --align weight or learned")
    if any("orthogonal" in s.refusals for s in spec.spaces_of_kind("qk")):
        raise SymalignError(f"OT fusion mixes the dimensions inside a head, which {model.family.name}'s rotary "
                            "position embeddings do not allow; use --align weight or learned")


def fuse_members(models: list[TransformerModel], how_align: str, data=None, settings: OTSettings | None = None,
                 max_examples: int | None = None, device: torch.device | str = "cpu",
                 kinds: tuple[str, ...] | None = None) -> list[TransformerModel]:
    """Every model carried into the first one's units by OT plans (canonical forms; the first
    unchanged): what a merge rule then combines. `data` is needed for `ot-acts`, which reads
    activations on `max_examples` evaluation examples (None: ACTIVATION_EXAMPLES). `kinds`: carry only
    the spaces of these kinds (Zhang et al. Fig. 4's "OT-Fusion on the FFN only": ("mlp",)); None: all."""
    settings = settings or OTSettings()
    settings.check()
    if how_align not in OT_ALIGNS:
        raise SymalignError(f"unknown OT alignment {how_align!r}; choose {', '.join(OT_ALIGNS)}")
    first = canonicalize(models[0])
    spec = spec_of(first)
    check_fusable(first, spec)
    if how_align == "ot-acts" and data is None:
        raise SymalignError("--align ot-acts needs data (--data SPEC): its plans compare activations")
    reg, max_examples = settings.strength(how_align), max_examples or ACTIVATION_EXAMPLES
    out = [first]
    for model in models[1:]:
        other = canonicalize(model)
        if how_align == "ot-acts":
            transform = acts_plans(first, spec, pair_moments(first, other, data, max_examples, device), settings,
                                   reg)
            if kinds is not None:
                transform = Transform({k: v for k, v in transform.items() if spec.spaces[k].kind in kinds})
            tensors = apply_unchecked(other.tensors, spec, transform)
            del transform  # the plans (an MLP's is n² floats) are not needed past their carrying
        else:
            tensors = weight_plans(first.tensors, dict(other.tensors), spec, boundary_tensors(first),
                                   first.dims.n_layer, settings, reg, kinds)
        out.append(other.with_tensors(tensors))
    return out


def acts_plans(a: TransformerModel, spec: SymmetrySpec, stats: dict[str, PairMoments], settings: OTSettings,
               reg: float) -> Transform:
    """OT-ACTS: each space's plan from the distances between standardised activations (none depends on
    another space's plan, as for activation matching), heads paired whole first. The distances come
    from the pair's moments: ‖z_a − z_b‖² summed over the residual's streams, over q and k for QK.
    Each point's moments are dropped from `stats` once read, so the plans replace them in memory."""
    def dist(*keys: str, order: torch.Tensor | None = None) -> torch.Tensor:
        sq = [stats.pop(k).standardised_sq_distances() for k in keys]
        return sum(sq if order is None else [paired(d, dh, order) for d in sq]).sqrt()

    dh = a.dims.d_head
    out = Transform()
    if "residual" in spec.spaces:
        out["residual"] = _distance_plan(dist(*residual_keys(stats)), settings, reg)
    for i in range(a.dims.n_layer):
        p = f"layer.{i}."
        if p + "mlp" in spec.spaces:
            out[p + "mlp"] = _distance_plan(dist(p + "mlp"), settings, reg)
        order = two_stage(stats[p + "heads"].pearson(), dh)
        out[p + "heads"] = Permutation(order)
        out[p + "qk"] = _head_distance_plans(dist(p + "q", p + "k", order=order), settings, reg)
        out[p + "vo"] = _head_distance_plans(dist(p + "heads", order=order), settings, reg)
    return out


def _features(a: dict, b: dict, spec: SymmetrySpec, space: str, names: list[str] | None = None):
    """Each unit's weights along every tensor axis of `space` (the others as carried so far), joined:
    [n, rest] for a space, [H, n, rest] for one batched by heads."""
    pairs = list(slices(a, b, spec, space, names=names))
    if not pairs:
        return None, None
    return torch.cat([u for u, _ in pairs], -1), torch.cat([u for _, u in pairs], -1)


def weight_plans(a: dict, b: dict, spec: SymmetrySpec, boundary: list[str], n_layer: int,
                 settings: OTSettings, reg: float, kinds: tuple[str, ...] | None = None,
                 followers: tuple[dict, ...] = ()) -> dict:
    """OT-WTS: one pass, residual first (from the embedding and head rows, whose other axes correspond
    across models), then each layer's MLP, heads (paired whole by their circuits), QK and VO, each
    solved on B as carried by the plans before it. Returns B's carried tensors. `kinds`: carry only
    spaces of these kinds (None: all). `followers`: tensor dicts of B's shape carried by the same plans in
    place (a fine-tune of B, whose task vector then moves with B: ot_task_vector)."""
    def carry(space: str, element: GroupElement) -> None:
        if kinds is not None and spec.spaces[space].kind not in kinds:
            return
        touched = {name for name, _, _ in spec.axes_of(space)}
        for tensors in (b, *followers):  # a follower may hold a subset (a fine-tune's body, its own head apart)
            tensors.update(apply_unchecked({n: tensors[n] for n in touched if n in tensors}, spec,
                                           Transform({space: element})))

    if "residual" in spec.spaces:
        fa, fb = _features(a, b, spec, "residual", boundary)
        if fa is not None:
            carry("residual", _space_plan(fa, fb, settings, reg))
    for i in range(n_layer):
        p = f"layer.{i}."
        if p + "mlp" in spec.spaces:
            carry(p + "mlp", _space_plan(*_features(a, b, spec, p + "mlp"), settings, reg))
        if p + "heads" in spec.spaces:
            carry(p + "heads", Permutation(assignment(head_cost(a, b, i, "circuit"))))
        for kind in ("qk", "vo"):
            if p + kind in spec.spaces:
                carry(p + kind, _head_plans(*_features(a, b, spec, p + kind), settings, reg))
    return b


def ot_acts_merge(members: list[TransformerModel], inputs: MergeInputs) -> dict[str, torch.Tensor]:
    """The `ot-acts` merge rule: the members carried onto the first by plans from activations, then
    averaged (on aligned members this is Zhang et al.'s matching as a plug-in before OT-ACTS)."""
    return _fused_average(members, "ot-acts", inputs)


def ot_wts_merge(members: list[TransformerModel], inputs: MergeInputs) -> dict[str, torch.Tensor]:
    """The `ot-wts` merge rule: the members carried onto the first by plans from weights, then averaged."""
    return _fused_average(members, "ot-wts", inputs)


def _fused_average(members: list[TransformerModel], how: str, inputs: MergeInputs) -> dict[str, torch.Tensor]:
    fused = fuse_members(members, how, inputs.data, inputs.ot, inputs.max_examples, inputs.device)
    return average(fused, inputs)


def ot_task_vector(b: TransformerModel, a: TransformerModel, a_ft: TransformerModel,
                   settings: OTSettings | None = None) -> dict[str, torch.Tensor]:
    """τ = π(A′) − π(A) in B's canonical basis, π OT-WTS's plans from A to B (Imfeld et al.'s transformer OT, the
    Optimal Transport baseline of TransFusion's Table 1): exact plans by default, which at equal widths are
    permutations, so π keeps A's function and τ is a task vector of B's basis."""
    settings = settings or OTSettings()
    settings.check()
    first = canonicalize(b)
    spec = spec_of(first)
    check_fusable(first, spec)
    moved_a = dict(canonicalize(a).tensors)
    names, _ = fine_tune_tensors(a, a_ft)  # a fine-tune's own new head stays out
    tuned = canonicalize(a_ft).tensors
    moved_ft = {n: tuned[n] for n in names}
    weight_plans(first.tensors, moved_a, spec, boundary_tensors(first), first.dims.n_layer, settings,
                 settings.strength("ot-wts"), followers=(moved_ft,))
    return {n: moved_ft[n].double() - moved_a[n].double() for n in moved_ft}
