"""The logical layout of a pre-LN transformer, shared by every family (GPT-2, ViT, ...).

A family's data file (symalign/models/families) maps a Hugging Face state dict into these logical tensors
(Linear convention [out, in], heads split into their own axis) and back, and tags them. Everything numeric
(applying symmetries, canonical form, matching) works on the logical form, so adding an architecture is a
data file, not new science.

Tags read "space:variance"; spaces other than ``residual`` are local to the layer.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from symalign.symmetry.spec import Space, SymmetrySpec, parse_tag, refusals_for

# What reads the final norm by default: the head (the canonical form folds the norm into it).
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
    norm: str = "layernorm"  # layernorm | rmsnorm | post-layernorm | sandwich-rmsnorm | stream-layernorm
    rotary_dims: int = 0  # dimensions of each head that rotary position embeddings rotate (0: no RoPE)
    gated: bool = False  # gated MLP (SwiGLU)
    qk_norm: bool = False  # an RMSNorm with learned gains over each head's q and k (Qwen3)
    head_size: int = 0  # a head's size when it is not width / heads (Qwen3-0.6B: 128 at width 1024, 16 heads)
    n_experts: int = 0  # a mixture of experts: experts per layer (0: one dense MLP)
    d_shared: int = 0  # units of a shared expert beside the routed ones (Qwen2-MoE; 0: none)

    @property
    def folds_norms(self) -> bool:
        """Whether the canonical form folds norm gains into readers: not when a norm sits on the residual
        stream (post-LN) or on each branch's output (Gemma 2's sandwich norms), where the residual
        admits permutations only and there is nothing to fold."""
        return self.norm in ("layernorm", "rmsnorm")

    @property
    def rope(self) -> bool:
        return self.rotary_dims > 0

    @property
    def d_head(self) -> int:
        return self.head_size or self.d_model // self.n_head

    @property
    def kv_heads(self) -> int:
        return self.n_kv_head or self.n_head

    @property
    def group(self) -> int:
        """Query heads per key/value head."""
        return self.n_head // self.kv_heads


def layer_name(i: int, local: str) -> str:
    return f"layer.{i}.{local}"


def tensor_tags(dims: Dims, outer: dict[str, tuple[str | None, ...]], block: dict, final_norm: dict) -> dict:
    """Tags of every logical tensor: the family's embedding/head rows, final norm and block rows."""
    tags = {name: tuple(parse_tag(t, None) for t in row) for name, row in outer.items()}
    tags.update({name: tuple(parse_tag(t, None) for t in row) for name, row in final_norm.items()})
    for i in range(dims.n_layer):
        for local, row in block.items():
            tags[layer_name(i, local)] = tuple(parse_tag(t, i) for t in row)
    return tags


def attention_spaces(dims: Dims) -> tuple[Space, ...]:
    """The per-layer spaces of a standard block, named as the tag rows name them (`batched_by` too;
    build_spec prefixes the layer and adds the refusals): MLP units, heads, and per head its QK and
    VO spaces (RoPE's rotated dimensions on QK)."""
    per_head = dict(size=dims.d_head, count=dims.kv_heads, batched_by="heads")
    return (Space("mlp", "mlp", dims.d_mlp), Space("heads", "heads", dims.kv_heads),
            Space("qk", "qk", rotated=dims.rotary_dims or None, **per_head), Space("vo", "vo", **per_head))


def grouped_attention_spaces(dims: Dims) -> tuple[Space, ...]:
    """Grouped-query attention: `heads` permutes key/value heads (their query heads move with them), a
    `qheads` space (also of kind heads) the query heads inside each group; the per-head QK and VO
    maps belong to the key/value head all its query heads share."""
    mlp, heads, qk, vo = attention_spaces(dims)
    return (mlp, heads, Space("qheads", "heads", dims.group, count=dims.kv_heads, batched_by="heads"), qk, vo)


def expert_spaces(dims: Dims) -> tuple[Space, ...]:
    """A mixture of experts (Mixtral): `experts` permutes a layer's experts with their router rows, and the
    MLP units are permuted inside each expert on their own (batched by the expert); attention as in
    `grouped_attention_spaces`."""
    _, heads, qheads, qk, vo = grouped_attention_spaces(dims)
    return (Space("experts", "experts", dims.n_experts), Space("mlp", "mlp", dims.d_mlp, count=dims.n_experts,
                                                               batched_by="experts"), heads, qheads, qk, vo)


def shared_expert_spaces(dims: Dims) -> tuple[Space, ...]:
    """A mixture of experts with a shared expert beside the routed ones (Qwen2-MoE): `expert_spaces` and
    the shared expert's units, a space of kind mlp of its own (they permute apart from every routed
    expert's)."""
    return (*expert_spaces(dims), Space("shared", "mlp", dims.d_shared))


def _refusals(local: Space, dims: Dims, canonical: bool) -> dict[str, str]:
    pairs = local.rotated_dims
    partial = f"the first {pairs} of {local.size} dimensions" if local.kind == "qk" and pairs < local.size else ""
    out = refusals_for(local.kind, activation=dims.activation, canonical=canonical, norm=dims.norm, rope=dims.rope,
                       gated=dims.gated, partial=partial, qk_norm=dims.qk_norm)
    if local.kind in ("qk", "vo") and pairs % 2:
        out = {**out, "rotary": f"rotary maps act on pairs of coordinates; {pairs} dimensions are odd"}
    return out


def build_spec(family: str, dims: Dims, outer: dict[str, tuple[str | None, ...]], canonical: bool,
               block: dict, final_norm: dict, local_spaces: tuple[Space, ...] | None = None) -> SymmetrySpec:
    """The symmetry spec of a transformer with these dimensions, block layout and declared per-layer
    spaces (`attention_spaces` unless the family declares its own)."""
    local_spaces = attention_spaces(dims) if local_spaces is None else local_spaces
    declared = {s.name for s in local_spaces}
    used = {t.split(":")[0] for row in block.values() for t in row if t} - {"residual"}
    if used - declared:
        raise ValueError(f"{family}: block rows name spaces {sorted(used - declared)} that the family does not declare")
    residual = refusals_for("residual", activation=dims.activation, canonical=canonical, norm=dims.norm)
    spaces = {"residual": Space("residual", "residual", dims.d_model, refusals=residual,
                                fixes_ones=dims.norm == "layernorm")}
    for i in range(dims.n_layer):
        for local in local_spaces:
            name = layer_name(i, local.name)
            spaces[name] = replace(local, name=name, refusals=_refusals(local, dims, canonical),
                                   batched_by=layer_name(i, local.batched_by) if local.batched_by else None)
    return SymmetrySpec(family, spaces, tensor_tags(dims, outer, block, final_norm), canonical)
