"""Activation matching (Verma & Elbayad): match spaces by how their units fire on data.

Each space is solved from its own activations, which the other spaces cannot change: MLP
units and per-head q, k and head outputs do not depend on the residual basis, and residual
streams do not depend on unit or head orders. So one pass suffices:
- residual: assignment (perm) or Procrustes fixing 1 (orthogonal) on hidden states; the
  strategy picks which streams: `first` (embeddings), `last`, `all` (summed), or `identity`;
- MLP units: assignment on the Pearson correlation of post-activation values (scaled
  permutations take the ratio of standard deviations as the scale);
- heads: two-stage (an inner assignment per head pair scores the pair, an outer assignment
  pairs heads: Verma & Elbayad's Head-Perm) on the per-head outputs, or `monotonic` (heads kept
  in order, features matched inside each: their Monotonic Head Alignment; `ignore` is its old
  name, kept for stored runs). Their Ignore-Heads is not a symmetry: symalign.merge.verma_relabellings;
- inside heads: Procrustes (orthogonal), assignment (perm) or least squares (invertible) on
  q and k (QK space) and on head outputs (VO space).
Every solve reads second moments only, so A and B run over the data in lockstep and each batch
is added to running sums (symalign.match.activation.moments): peak memory is the statistics, not every
layer's activations of both models. Heads are paired as blocks of those statistics
(symalign.match.activation.moments)."""

from __future__ import annotations

from typing import NamedTuple

import torch

from symalign.errors import SymalignError
from symalign.match.activation.capture import residual_keys
from symalign.match.activation.moments import PairMoments, blocks, pair_moments, paired, two_stage
from symalign.match.activation.options import HEAD_STRATEGIES
from symalign.match.matchers import MatchInputs, MatchOutput
from symalign.match.solvers import (
    assignment,
    permutation_matrices,
    procrustes,
    procrustes_fixing_ones,
    rotary_fit_moments,
)
from symalign.models.family import TransformerModel
from symalign.symmetry.groups import Dense, Permutation, ScaledPermutation
from symalign.symmetry.spec import SymmetrySpec
from symalign.symmetry.transform import Transform

RESIDUAL_STRATEGIES = ("all", "first", "last", "identity", "separate")


def _residual(stats: dict[str, PairMoments], cls: str, strategy: str, fixes_ones: bool = True):
    if strategy == "separate":
        raise SymalignError("residual strategy 'separate' (a different map per layer) is not a symmetry: it changes "
                            "the function, and symalign's aligned models must compute B's function; "
                            "use all, first or last")
    streams = residual_keys(stats)
    chosen = {"all": streams, "first": streams[:1], "last": streams[-1:]}[strategy]
    if cls == "perm":
        return Permutation(assignment(sum(stats[k].pearson() for k in chosen)))
    cross = sum(stats[k].raw_cross() for k in chosen)
    return Dense(procrustes_fixing_ones(cross) if fixes_ones else procrustes(cross[None])[0], "orthogonal")


class HeadSide(NamedTuple):
    """One activation point's raw moments per key/value head, A's head h against B's head paired with it
    (a group's query heads summed, as more samples of the same map): Σ a bᵀ, Σ a², Σ b², Σ b bᵀ."""
    cross: torch.Tensor  # [kv, dh, dh]
    sq_a: torch.Tensor  # [kv, dh]
    sq_b: torch.Tensor
    gram_b: torch.Tensor | None


def head_side(m: PairMoments, d_head: int, b_heads: torch.Tensor, kv: int) -> HeadSide:
    """`m` over heads × d_head features, B's head b_heads[i] paired with A's head i (len(b_heads) = kv·group)."""
    def grouped(t):
        return t.reshape(kv, -1, *t.shape[1:]).sum(1)
    sq_a, sq_b = (s.reshape(-1, d_head) for s in m.raw_squares())
    gram = grouped(m.raw_gram_b()[b_heads]) if m.gram_b is not None else None
    return HeadSide(grouped(paired(m.raw_cross(), d_head, b_heads)), grouped(sq_a), grouped(sq_b[b_heads]), gram)


def _inner(cls: str, sides: list[HeadSide], rotated: int | None = None):
    """Per-head element from each side's moments (co side first: q for QK, head outputs for VO)."""
    first = sides[0]
    if cls == "orthogonal":
        return Dense(procrustes(sum(s.cross for s in sides)), "orthogonal")
    if cls == "perm":
        return permutation_matrices(sum(s.cross for s in sides))
    if cls == "invertible":
        return Dense(torch.linalg.solve(first.gram_b, first.cross.mT).mT, "invertible")
    if cls == "rescale":
        s = first.sq_a.sum(-1).sqrt() / first.sq_b.sum(-1).sqrt().clamp_min(1e-12)
        return Dense(s[:, None, None] * torch.eye(first.cross.shape[-1], dtype=torch.float64), "rescale")
    if cls == "rotary":  # q (and head outputs) move by G, k by G^-T
        return Dense(rotary_fit_moments([s[:3] for s in sides[:1]], [s[:3] for s in sides[1:]], rotated), "rotary")
    raise SymalignError(f"activation matching has no solver for {cls} inside heads; use perm, orthogonal, invertible, "
                        "rescale or rotary")


def activation_match(a: TransformerModel, b: TransformerModel, spec: SymmetrySpec, classes: dict[str, str], data,
                     residual_strategy: str = "all", heads: str = "two-stage", max_examples: int | None = 256,
                     device: torch.device | str = "cpu", shared_qkv: bool = False) -> Transform:
    """B's transform toward A from the pair's activation moments. `shared_qkv`: one permutation per head for Q,
    K and V together (Verma & Elbayad's P_MHA), solved on the sum of the three sides' cross-moments, in place of
    separate QK and VO permutations; it needs `perm` for both qk and vo."""
    if shared_qkv and (classes.get("qk"), classes.get("vo")) != ("perm", "perm"):
        raise SymalignError("one permutation for Q, K and V (P_MHA) needs the qk and vo classes both 'perm'; got "
                            f"qk {classes.get('qk', 'none')}, vo {classes.get('vo', 'none')}")
    if residual_strategy not in RESIDUAL_STRATEGIES:
        raise SymalignError(f"unknown residual strategy {residual_strategy!r}; "
                            f"choose from {', '.join(RESIDUAL_STRATEGIES)}")
    if heads not in HEAD_STRATEGIES:
        raise SymalignError(f"unknown head strategy {heads!r}; choose two-stage or monotonic")
    if spec.spaces_of_kind("experts"):
        raise SymalignError(f"activation matching of a mixture of experts ({a.family.name}) is not built: each expert "
                            "sees only the tokens routed to it; use --method weight (or learned, which starts there)")
    data.check_model(a)
    stats = pair_moments(a, b, data, max_examples, device)
    out = Transform()
    if classes.get("residual", "none") != "none" and residual_strategy != "identity":
        out["residual"] = _residual(stats, classes["residual"], residual_strategy, spec.spaces["residual"].fixes_ones)
    dh, kv, g = a.dims.d_head, a.dims.kv_heads, a.dims.group
    for i in range(a.dims.n_layer):
        p = f"layer.{i}."
        mlp_cls = classes.get("mlp", "none")
        if mlp_cls != "none":
            mlp = stats[p + "mlp"]
            perm = assignment(mlp.pearson())
            if mlp_cls == "scaled_perm":
                std_a, std_b = mlp.stds()
                out[p + "mlp"] = ScaledPermutation(perm, std_a / std_b[perm].clamp_min(1e-12))
            else:
                out[p + "mlp"] = Permutation(perm)
        order = torch.arange(kv)
        pairs_heads = classes.get("heads", "none") != "none" and heads == "two-stage"
        if pairs_heads:
            corr = stats[p + "heads"].pearson()
            order = two_stage(corr, g * dh)  # key/value groups whole
            out[p + "heads"] = Permutation(order)
        # B's query head paired with each of A's: its group's in A's key/value order, then each group's own order
        query = (order[:, None] * g + torch.arange(g)).reshape(-1)
        if g > 1 and p + "qheads" in spec.spaces and pairs_heads:
            group_blocks = blocks(corr, g * dh)
            perms = [two_stage(group_blocks[h, order[h]], dh) for h in range(kv)]
            eye = torch.eye(g, dtype=torch.float64)
            out[p + "qheads"] = Dense(torch.stack([eye[pm] for pm in perms]), "perm")
            query = torch.stack([order[h] * g + pm for h, pm in enumerate(perms)]).reshape(-1)
        sides = {"qk": [head_side(stats[p + "q"], dh, query, kv), head_side(stats[p + "k"], dh, order, kv)],
                 "vo": [head_side(stats[p + "heads"], dh, query, kv)]}
        if shared_qkv:  # P_MHA: the same per-head permutation moves Q, K and V
            out[p + "qk"] = out[p + "vo"] = _inner("perm", sides["qk"] + sides["vo"])
            continue
        for kind, kind_sides in sides.items():
            if classes.get(kind, "none") != "none":
                out[p + kind] = _inner(classes[kind], kind_sides, spec.spaces[p + kind].rotated)
    return out


def run_activation_matching(inputs: MatchInputs) -> MatchOutput:
    """The `activation` matcher (symalign.match.matchers)."""
    from symalign.data import load_data

    c = inputs.config
    return MatchOutput(activation_match(inputs.a, inputs.b, inputs.spec, inputs.classes, load_data(c.data),
                                        c.residual_strategy, c.head_strategy, c.max_examples, device=inputs.device))
