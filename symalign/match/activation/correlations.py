"""How alike two models' features are, layer by layer, before and after alignment (Verma &
Elbayad's Fig. 4), and the head-output cross-correlation whose diagonal blocks show that heads,
not single units, are what corresponds (their Fig. 5).

For each layer: the mean Pearson correlation of A's unit i with B's unit i over the evaluation
data, for the MLP's hidden units, the heads' outputs (the attention output projection's input,
head by head) and the residual stream after the block. "Before" reads B as it is (unit i of B is
whatever sits at i); "after" reads B aligned into A's basis. The head map is |corr| between A's
and B's head-output features, d_head per head, so a good head match shows as bright d_head-square
blocks on the diagonal; `within` and `across` are the mean |corr| inside those blocks and outside."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch

from symalign.match.activation.moments import pair_moments
from symalign.models.family import TransformerModel

KINDS = ("mlp", "heads", "residual")


@dataclass
class LayerCorrelation:
    layer: int
    kind: str  # mlp | heads | residual (the stream after the block)
    before: float  # mean corr(A's unit i, B's unit i), B as given
    after: float  # the same with B aligned


@dataclass
class HeadBlocks:
    layer: int
    heads: int
    d_head: int
    within_before: float  # mean |corr| inside the diagonal head blocks, B as given
    across_before: float  # ... outside them
    within_after: float  # the same with B aligned
    across_after: float
    before: torch.Tensor  # [H·d_head, H·d_head] |corr| of A's head-output features with B's
    after: torch.Tensor

    def to_json(self, matrices: bool = False) -> dict:
        out = {k: v for k, v in asdict(self).items() if k not in ("before", "after")}
        if matrices:
            out.update(before=self.before.tolist(), after=self.after.tolist())
        return out


@dataclass
class Correlations:
    layers: list[LayerCorrelation]
    heads: list[HeadBlocks]  # one per layer

    def to_json(self, matrices_of: int | None = None) -> dict:
        return {"layers": [asdict(r) for r in self.layers],
                "heads": [h.to_json(matrices=h.layer == matrices_of) for h in self.heads]}


def _matched(corr: torch.Tensor) -> float:
    """Mean correlation of A's unit i with B's unit i."""
    return float(corr.diagonal().mean())


def head_block_means(corr: torch.Tensor, d_head: int) -> tuple[torch.Tensor, float, float]:
    """|corr| over heads × d_head features and its mean inside and outside the diagonal head blocks."""
    c, heads = corr.abs(), corr.shape[0] // d_head
    inside = torch.block_diag(*[torch.ones(d_head, d_head, dtype=torch.bool)] * heads)
    across = float(c[~inside].mean()) if heads > 1 else float("nan")
    return c, float(c[inside].mean()), across


def feature_correlations(a: TransformerModel, b: TransformerModel, aligned: TransformerModel, data,
                         max_examples: int | None = 256, device: torch.device | str = "cpu") -> Correlations:
    """Per-layer matched-feature correlations and head maps of A against B as given and aligned (from the
    pairs' streamed moments: one batch of each model held at a time)."""
    data.check_model(a)
    given, after = (pair_moments(a, other, data, max_examples, device) for other in (b, aligned))
    layers, heads = [], []
    dh = a.dims.d_head
    for i in range(a.dims.n_layer):
        keys = {"mlp": f"layer.{i}.mlp", "heads": f"layer.{i}.heads", "residual": f"residual.{i + 1}"}
        corr = {kind: (given[key].pearson(), after[key].pearson()) for kind, key in keys.items()}
        for kind in keys:
            layers.append(LayerCorrelation(i, kind, _matched(corr[kind][0]), _matched(corr[kind][1])))
        before, within_b, across_b = head_block_means(corr["heads"][0], dh)
        mapped, within_a, across_a = head_block_means(corr["heads"][1], dh)
        heads.append(HeadBlocks(i, before.shape[0] // dh, dh, within_b, across_b, within_a, across_a, before, mapped))
    return Correlations(layers, heads)
