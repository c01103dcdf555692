"""Relabellings that are *not* symmetries: Verma & Elbayad's Ignore-Heads and Separate residual.

Why they exist in a tool about symmetries: Verma & Elbayad's Tables 1 and 2 report them beside the
function-preserving strategies, and a reader comparing with the paper needs the rows. Both permute
B's units where the network's wiring does not allow it, so B relabelled computes a different
function from B: they are merged and measured, always labelled "not a symmetry", and never
offered where symalign promises B's function (align, transforms, the pages).

- Ignore-Heads: the attention features (all heads' dimensions at once) get one free assignment,
  so a feature may move to another head: per-head attention weights then mix features of
  different heads. Query and key features share one assignment (scored on q and k), value
  features another (scored on the heads' outputs), as their weights' rows and o's columns.
- TransFusion's per-block residual (any norm placement): the same structure, each stream's permutation
  from the weights that touch it (weight_stream_permutations); TransFusion puts the composed permutation
  on the skip connection, so it moves task vectors, not models.
- Separate residual (post-LN models): each residual stream (after the embedding norm and after
  every sublayer's norm) gets its own assignment on its own states; everything writing a stream
  and everything reading it uses that stream's permutation, so the skip connection from one
  stream to the next is the only place where the labels disagree. With every stream given the
  same permutation it is the residual symmetry (tests check this)."""

from __future__ import annotations

import torch

from symalign.errors import SymalignError
from symalign.match.activation.moments import pearson
from symalign.match.solvers import assignment
from symalign.models.family import TransformerModel

ATTENTION_ROWS = ("q", "k", "v")


def attention_streams(model: TransformerModel, data, max_examples: int | None = 256) -> dict[str, torch.Tensor]:
    """Every residual stream of a post-LN model, [rows, d] each: `stream.0` after the embedding norm,
    `stream.{2i+1}` after block i's attention norm, `stream.{2i+2}` after its MLP norm."""
    from symalign.match.activation.capture import MAX_ROWS

    if model.dims.norm != "post-layernorm":
        raise SymalignError("separate residual streams are defined for post-LN models (BERT, RoBERTa): in a pre-LN "
                            "model every block adds into one stream")
    module = model.to_module().eval()
    modules = dict(module.named_modules())
    store: dict[str, list[torch.Tensor]] = {}
    handles = []

    def keep(key):
        def hook(_, __, out):
            out = out[0] if isinstance(out, tuple) else out
            store.setdefault(key, []).append(out.detach().reshape(-1, out.shape[-1]))
        return hook

    for i in range(model.dims.n_layer):
        for j, point in ((2 * i + 1, "heads"), (2 * i + 2, "mlp")):
            points = model.family.hook_points  # the sublayer, norm included, unless the family names its norm
            parent = points.get(f"{point}_stream", points[point].rsplit(".", 1)[0]).format(i=i)
            handles.append(modules[parent].register_forward_hook(keep(f"stream.{j}")))
    try:
        with torch.no_grad():
            for inputs, _ in data.eval_batches(model, max_examples):
                hidden = module(**inputs, output_hidden_states=True).hidden_states
                store.setdefault("stream.0", []).append(hidden[0].reshape(-1, hidden[0].shape[-1]))
    finally:
        for h in handles:
            h.remove()
    return {k: torch.cat(v)[:MAX_ROWS].double() for k, v in store.items()}


def stream_permutations(streams_a: dict, streams_b: dict, strategy: str) -> list[torch.Tensor]:
    """One permutation per stream (B's unit for each of A's): `separate` solves each stream alone; `first`,
    `last` and `all` solve one permutation (on the first, the last, or every stream's correlations
    summed: Verma & Elbayad's strategies) and give it to every stream."""
    keys = sorted(streams_a, key=lambda k: int(k.split(".")[1]))
    if strategy == "separate":
        return [assignment(pearson(streams_a[k], streams_b[k])) for k in keys]
    chosen = {"first": keys[:1], "last": keys[-1:], "all": keys}.get(strategy)
    if chosen is None:
        raise SymalignError(f"unknown residual strategy {strategy!r}; choose first, last, all or separate")
    perm = assignment(sum(pearson(streams_a[k], streams_b[k]) for k in chosen))
    return [perm] * len(keys)


def _pre_ln_stream_of(name: str, n_layer: int) -> int:
    """Which residual stream a pre-LN tensor's residual axis belongs to: stream 0 is the embedding's, 2i+1 the
    sum after block i's attention, 2i+2 after its MLP. A sublayer's norm and input projections read the stream
    before it; its output projection writes the next; the final norm and the head read the last."""
    if name.startswith("layer."):
        i, rest = int(name.split(".")[1]), name.split(".", 2)[2]
        if rest.startswith("attn.o."):
            return 2 * i + 1
        if rest.startswith(("ln1.", "attn.")):
            return 2 * i
        if rest.startswith("mlp.proj."):
            return 2 * i + 2
        if rest.startswith(("ln2.", "mlp.")):
            return 2 * i + 1
        raise SymalignError(f"{name}: not a pre-LN block tensor symalign knows")
    return 0 if name.startswith("embed.") else 2 * n_layer


def stream_of(model: TransformerModel, name: str, reads: bool) -> int:
    """The residual stream a tensor's residual axis belongs to, for the model's norm placement."""
    if model.dims.norm == "post-layernorm":
        return _stream_of(name, reads, model.dims.n_layer)
    return _pre_ln_stream_of(name, model.dims.n_layer)


def _stream_of(name: str, reads: bool, n_layer: int) -> int:
    """Which residual stream a post-LN tensor's residual axis belongs to (see the module docstring);
    `reads`: the axis reads the residual (a contravariant axis) rather than writing or scaling it."""
    if name.startswith("layer."):
        i, rest = int(name.split(".")[1]), name.split(".", 2)[2]
        if rest.startswith("attn."):
            return 2 * i if reads else 2 * i + 1
        if rest.startswith("ln1."):
            return 2 * i + 1
        if rest.startswith("mlp."):
            return 2 * i + 1 if reads else 2 * i + 2
        if rest.startswith("ln2."):
            return 2 * i + 2
        raise SymalignError(f"{name}: not a post-LN block tensor symalign knows")
    # a head's first layer reads the last stream (an MLM's transform, a classifier's pooler); everything else
    # in the head (the MLM transform's output, its decoder tied to the token embedding) is in stream 0's basis
    return 2 * n_layer if name in ("head.transform.weight", "head.pooler.weight") and reads else 0


def relabel_streams(model: TransformerModel, perms: list[torch.Tensor]) -> TransformerModel:
    """B with each residual stream's units reordered by its own permutation (perms[s]: B's unit for A's
    unit at stream s). A function-preserving residual permutation when every stream gets the same one."""
    from symalign.models import spec_of

    n = model.dims.n_layer
    if len(perms) != 2 * n + 1:
        raise SymalignError(f"a post-LN model of {n} blocks has {2 * n + 1} residual streams, not {len(perms)}")
    tags = spec_of(model).tensors
    out = {}
    for name, tensor in model.tensors.items():
        for axis, tag in enumerate(tags.get(name, ())):
            if tag is not None and tag.space == "residual":
                tensor = tensor.index_select(axis, perms[stream_of(model, name, tag.variance == "contra")])
        out[name] = tensor
    return model.with_tensors(out)


def weight_stream_permutations(reference: TransformerModel, moving: TransformerModel) -> list[torch.Tensor]:
    """One permutation per residual stream from the weights alone (TransFusion's residual, its eq. 12: each
    sublayer's output projection brings its own permutation, the skip connection composes them): for stream s,
    the assignment maximising Σ ⟨reference, moving⟩ over every tensor whose residual axis lies in s, their other
    axes as they are (aligned before: units, heads). perms[s]: `moving`'s unit for each of `reference`'s, as
    relabel_streams takes it. Not a symmetry: a model relabelled so computes another function."""
    from symalign.models import spec_of

    tags, d = spec_of(moving).tensors, moving.dims.d_model
    costs = [torch.zeros(d, d, dtype=torch.float64) for _ in range(2 * moving.dims.n_layer + 1)]
    for name, tensor in moving.tensors.items():
        axes = [(i, t) for i, t in enumerate(tags.get(name, ())) if t is not None and t.space == "residual"]
        if len(axes) != 1:  # no residual axis, or two (an MLM head's transform): no evidence of one stream alone
            continue
        axis, tag = axes[0]
        ours = reference.tensors[name].double().movedim(axis, 0).reshape(d, -1)
        theirs = tensor.double().movedim(axis, 0).reshape(d, -1)
        costs[stream_of(moving, name, tag.variance == "contra")] += ours @ theirs.T
    return [assignment(c) for c in costs]


def ignore_heads(a: TransformerModel, b: TransformerModel, acts_a: dict, acts_b: dict) -> TransformerModel:
    """B with each block's attention features permuted freely across heads (Verma & Elbayad's
    Ignore-Heads): one assignment for query/key features (q and k correlations summed), one for value
    features (the heads' outputs), over all heads' dimensions at once. `acts_*`: activation.collect's."""
    if b.dims.kv_heads != b.dims.n_head:
        raise SymalignError("Ignore-Heads is defined for models with one key/value head per query head")
    out = dict(b.tensors)
    for i in range(b.dims.n_layer):
        p = f"layer.{i}."

        def flat(key, acts, p=p):
            return acts[p + key].reshape(acts[p + key].shape[0], -1)

        qk = assignment(pearson(flat("q", acts_a), flat("q", acts_b)) + pearson(flat("k", acts_a), flat("k", acts_b)))
        vo = assignment(pearson(flat("heads", acts_a), flat("heads", acts_b)))
        for name, perm in (("q", qk), ("k", qk), ("v", vo)):
            for part in ("weight", "bias"):
                key = f"{p}attn.{name}.{part}"
                if key in out:
                    t = out[key]
                    out[key] = t.reshape(-1, *t.shape[2:])[perm].reshape(t.shape)
        o = out[p + "attn.o.weight"]  # [d, h, dh]
        out[p + "attn.o.weight"] = o.reshape(o.shape[0], -1)[:, vo].reshape(o.shape)
    return b.with_tensors(out)
