"""The logical layout of a pre-LN transformer, shared by every family (GPT-2, ViT, ...).

Adapters translate a Hugging Face state dict into these logical tensors (Linear convention
[out, in], heads split into their own axis) and back. Everything numeric — applying
symmetries, canonical form, matching — works on the logical form, so adding an architecture
is writing an adapter's name mapping plus its embedding/head rows below, not new science.

Tags read "space:variance"; spaces other than ``residual`` are local to the layer.
"""

from __future__ import annotations

from dataclasses import dataclass

from symalign.symmetry.spec import KINDS, Space, SymmetrySpec, parse_tag, refusals_for

BLOCK: dict[str, tuple[str | None, ...]] = {
    "ln1.weight": ("residual:diag",),
    "ln1.bias": ("residual:co",),
    "attn.q.weight": ("heads:co", "qk:co", "residual:contra"),
    "attn.q.bias": ("heads:co", "qk:co"),
    "attn.k.weight": ("heads:co", "qk:contra", "residual:contra"),
    "attn.k.bias": ("heads:co", "qk:contra"),
    "attn.v.weight": ("heads:co", "vo:co", "residual:contra"),
    "attn.v.bias": ("heads:co", "vo:co"),
    "attn.o.weight": ("residual:co", "heads:contra", "vo:contra"),
    "attn.o.bias": ("residual:co",),
    "ln2.weight": ("residual:diag",),
    "ln2.bias": ("residual:co",),
    "mlp.fc.weight": ("mlp:co", "residual:contra"),
    "mlp.fc.bias": ("mlp:co",),
    "mlp.proj.weight": ("residual:co", "mlp:contra"),
    "mlp.proj.bias": ("residual:co",),
}

FINAL_NORM: dict[str, tuple[str | None, ...]] = {
    "norm.weight": ("residual:diag",),
    "norm.bias": ("residual:co",),
}

# Which LayerNorm feeds which readers (the canonical form folds γ, β into them).
BLOCK_NORM_READERS: dict[str, tuple[str, ...]] = {
    "ln1": ("attn.q", "attn.k", "attn.v"),
    "ln2": ("mlp.fc",),
}
FINAL_NORM_READERS: tuple[str, ...] = ("head",)


@dataclass(frozen=True)
class Dims:
    """The sizes a spec needs, read from a Hugging Face config."""

    n_layer: int
    n_head: int
    d_model: int
    d_mlp: int
    activation: str
    n_kv_head: int = 0  # grouped-query attention: key/value heads (0: one per query head)
    norm: str = "layernorm"  # layernorm | rmsnorm | post-layernorm
    rope: bool = False  # rotary position embeddings act on q and k
    gated: bool = False  # gated MLP (SwiGLU)

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_head

    @property
    def kv_heads(self) -> int:
        return self.n_kv_head or self.n_head

    @property
    def group(self) -> int:
        """Query heads per key/value head."""
        return self.n_head // self.kv_heads


def layer_name(i: int, local: str) -> str:
    return f"layer.{i}.{local}"


def tensor_tags(dims: Dims, outer: dict[str, tuple[str | None, ...]], block: dict = BLOCK,
                final_norm: dict = FINAL_NORM) -> dict:
    """Tags of every logical tensor: the family's embedding/head rows, final norm and block rows."""
    tags = {name: tuple(parse_tag(t, None) for t in row) for name, row in outer.items()}
    tags.update({name: tuple(parse_tag(t, None) for t in row) for name, row in final_norm.items()})
    for i in range(dims.n_layer):
        for local, row in block.items():
            tags[layer_name(i, local)] = tuple(parse_tag(t, i) for t in row)
    return tags


def build_spec(family: str, dims: Dims, outer: dict[str, tuple[str | None, ...]], canonical: bool,
               block: dict = BLOCK, final_norm: dict = FINAL_NORM) -> SymmetrySpec:
    """The symmetry spec of a transformer with these dimensions and this block layout.

    With grouped-query attention the `heads` space permutes key/value heads (their query heads move
    with them), a `qheads` space (also of kind heads) permutes the query heads inside each group,
    and the per-head qk and vo maps belong to the key/value head that all its query heads share."""
    reasons = {k: refusals_for(k, activation=dims.activation, canonical=canonical, norm=dims.norm, rope=dims.rope,
                               gated=dims.gated) for k in KINDS}
    if dims.d_head % 2:
        for kind in ("qk", "vo"):
            reasons[kind] = {**reasons[kind], "rotary": f"rotary maps act on pairs of coordinates; the head size {dims.d_head} is odd"}
    spaces = {"residual": Space("residual", "residual", dims.d_model, refusals=reasons["residual"],
                                fixes_ones=dims.norm == "layernorm")}
    grouped = any(t and t.startswith("qheads") for row in block.values() for t in row)
    for i in range(dims.n_layer):
        heads = layer_name(i, "heads")
        spaces[layer_name(i, "mlp")] = Space(layer_name(i, "mlp"), "mlp", dims.d_mlp, refusals=reasons["mlp"])
        spaces[heads] = Space(heads, "heads", dims.kv_heads, refusals=reasons["heads"])
        if grouped:
            name = layer_name(i, "qheads")
            spaces[name] = Space(name, "heads", dims.group, count=dims.kv_heads, batched_by=heads,
                                 refusals=reasons["heads"])
        for kind in ("qk", "vo"):
            name = layer_name(i, kind)
            spaces[name] = Space(name, kind, dims.d_head, count=dims.kv_heads, batched_by=heads, refusals=reasons[kind])
    return SymmetrySpec(family, spaces, tensor_tags(dims, outer, block, final_norm), canonical)
