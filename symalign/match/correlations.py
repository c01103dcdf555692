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

from symalign.match.capture import collect
from symalign.match.moments import pearson
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


def _matched(a: torch.Tensor, b: torch.Tensor) -> float:
    """Mean correlation of column i of `a` with column i of `b` (rows are samples)."""
    return float(pearson(a, b).diagonal().mean())


def head_blocks(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, float, float]:
    """|corr| of head-output features [rows, H, d_head] of A and B, and its mean inside and outside
    the diagonal d_head × d_head blocks."""
    heads, d = a.shape[1], a.shape[2]
    c = pearson(a.reshape(a.shape[0], -1), b.reshape(b.shape[0], -1)).abs()
    inside = torch.block_diag(*[torch.ones(d, d, dtype=torch.bool)] * heads)
    across = float(c[~inside].mean()) if heads > 1 else float("nan")
    return c, float(c[inside].mean()), across


def feature_correlations(a: TransformerModel, b: TransformerModel, aligned: TransformerModel, data,
                         max_examples: int | None = 256, device: torch.device | str = "cpu") -> Correlations:
    """Per-layer matched-feature correlations and head maps of A against B as given and aligned."""
    data.check_model(a)
    acts = [collect(m, data, max_examples, device) for m in (a, b, aligned)]
    layers, heads = [], []
    for i in range(a.dims.n_layer):
        keys = {"mlp": f"layer.{i}.mlp", "heads": f"layer.{i}.heads", "residual": f"residual.{i + 1}"}
        for kind, key in keys.items():
            x, y, z = (act[key] for act in acts)
            if kind == "heads":
                x, y, z = (t.reshape(t.shape[0], -1) for t in (x, y, z))
            layers.append(LayerCorrelation(i, kind, _matched(x, y), _matched(x, z)))
        x, y, z = (act[f"layer.{i}.heads"] for act in acts)
        before, within_b, across_b = head_blocks(x, y)
        after, within_a, across_a = head_blocks(x, z)
        heads.append(HeadBlocks(i, x.shape[1], x.shape[2], within_b, across_b, within_a, across_a, before, after))
    return Correlations(layers, heads)
