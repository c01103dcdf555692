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
  name, kept for stored runs). Their Ignore-Heads is not a symmetry: symalign.merge.relabel;
- inside heads: Procrustes (orthogonal), assignment (perm) or least squares (invertible) on
  q and k (QK space) and on head outputs (VO space)."""

from __future__ import annotations

import torch

from symalign.errors import SymalignError
from symalign.match.mapped import PrecisionView
from symalign.match.matchers import MatchInputs, MatchOutput
from symalign.match.options import HEAD_STRATEGIES
from symalign.match.solvers import assignment, permutation_matrices, procrustes, procrustes_fixing_ones, rotary_fit
from symalign.models.family import TransformerModel
from symalign.models.fused import split_qkv
from symalign.symmetry.groups import Dense, Permutation, ScaledPermutation
from symalign.symmetry.spec import SymmetrySpec
from symalign.symmetry.transform import Transform

RESIDUAL_STRATEGIES = ("all", "first", "last", "identity", "separate")
MAX_ROWS = 20_000


@torch.no_grad()
def collect(model: TransformerModel, data, max_examples: int | None = 256,
            device: torch.device | str = "cpu") -> PrecisionView:
    """Activations [rows, ...] on the evaluation batches: residual.j, layer.i.{mlp,heads,q,k}, the first
    MAX_ROWS rows (token positions) of each. The forward passes run on `device` and stop once they
    have those rows; activations are kept on the CPU in the model's precision and read as float64
    one at a time (a GPT-2-small's every layer in float64 would be twice the memory)."""
    module = model.to_module().to(device)
    dims = model.dims
    store: dict[str, list[torch.Tensor]] = {}
    handles = []

    def keep(key):
        def pre_hook(_, args):
            store.setdefault(key, []).append(args[0].detach().reshape(-1, args[0].shape[-1]).cpu())
        return pre_hook

    def keep_out(keys, fused=False):
        def hook(_, __, out):
            flat = out.detach().reshape(-1, out.shape[-1]).cpu()
            parts = split_qkv(flat, dims.n_head, model.family.fused_qkv, dim=-1) if fused else (flat,)
            for key, part in zip(keys, parts):
                store.setdefault(key, []).append(part)
        return hook

    modules = dict(module.named_modules())
    for i in range(dims.n_layer):
        points = {k: v.format(i=i) for k, v in model.family.hook_points.items()}
        handles.append(modules[points["mlp"]].register_forward_pre_hook(keep(f"layer.{i}.mlp")))
        handles.append(modules[points["heads"]].register_forward_pre_hook(keep(f"layer.{i}.heads")))
        if "qkv" in points:
            handles.append(modules[points["qkv"]].register_forward_hook(keep_out([f"layer.{i}.q", f"layer.{i}.k"],
                                                                                 fused=True)))
        else:
            handles.append(modules[points["q"]].register_forward_hook(keep_out([f"layer.{i}.q"])))
            handles.append(modules[points["k"]].register_forward_hook(keep_out([f"layer.{i}.k"])))
    rows = 0
    try:
        for inputs, _ in data.eval_batches(model, max_examples):
            hidden = module(**{k: v.to(device) for k, v in inputs.items()}, output_hidden_states=True).hidden_states
            for j, h in enumerate(hidden):
                store.setdefault(f"residual.{j}", []).append(h.reshape(-1, h.shape[-1]).cpu())
            rows += hidden[0].reshape(-1, hidden[0].shape[-1]).shape[0]
            if rows >= MAX_ROWS:  # the solves read the first MAX_ROWS rows: later batches would be dropped
                break
    finally:
        for h in handles:
            h.remove()
    out = {}
    for key in list(store):  # one key's chunks and its concatenation at a time, not every key's twice
        out[key] = torch.cat(store.pop(key))[:MAX_ROWS]
    for key in [k for k in out if not k.startswith("residual")]:
        if not key.endswith(".mlp"):
            out[key] = out[key].reshape(out[key].shape[0], -1, dims.d_head)  # k: key/value heads only
    return PrecisionView(out, torch.float64)


def pearson(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """[n, n] correlation of a's columns with b's columns (rows are samples)."""
    a = (a - a.mean(0)) / a.std(0).clamp_min(1e-8)
    b = (b - b.mean(0)) / b.std(0).clamp_min(1e-8)
    return a.T @ b / a.shape[0]


def _residual(acts_a, acts_b, cls: str, strategy: str, fixes_ones: bool = True):
    if strategy == "separate":
        raise SymalignError("residual strategy 'separate' (a different map per layer) is not a symmetry: it changes "
                            "the function, and symalign's aligned models must compute B's function; "
                            "use all, first or last")
    streams = sorted(k for k in acts_a if k.startswith("residual."))
    chosen = {"all": streams, "first": streams[:1], "last": streams[-1:]}[strategy]
    if cls == "perm":
        return Permutation(assignment(sum(pearson(acts_a[k], acts_b[k]) for k in chosen)))
    cross = sum(acts_a[k].T @ acts_b[k] for k in chosen)
    return Dense(procrustes_fixing_ones(cross) if fixes_ones else procrustes(cross[None])[0], "orthogonal")


def _heads_two_stage(qa: torch.Tensor, qb: torch.Tensor) -> torch.Tensor:
    """Outer assignment over heads scored by inner assignments of per-head units ([rows, H, dh])."""
    h = qa.shape[1]
    score = torch.zeros(h, h, dtype=torch.float64)
    for i in range(h):
        for j in range(h):
            c = pearson(qa[:, i], qb[:, j])
            score[i, j] = c[torch.arange(c.shape[0]), assignment(c)].sum()
    return assignment(score)


def _inner(cls: str, pairs: list[tuple[torch.Tensor, torch.Tensor]], rotated: int | None = None):
    """Per-head element from activation pairs [rows, H, dh] (after the head permutation)."""
    cross = sum(torch.einsum("rhi,rhj->hij", a, b) for a, b in pairs)
    if cls == "orthogonal":
        return Dense(procrustes(cross), "orthogonal")
    if cls == "perm":
        return permutation_matrices(cross)
    if cls == "invertible":
        a, b = pairs[0]
        gram = torch.einsum("rhi,rhj->hij", b, b)
        return Dense(torch.linalg.solve(gram, torch.einsum("rhi,rhj->hij", a, b).mT).mT, "invertible")
    if cls == "rescale":
        a, b = pairs[0]
        s = a.norm(dim=(0, 2)) / b.norm(dim=(0, 2)).clamp_min(1e-12)
        return Dense(s[:, None, None] * torch.eye(a.shape[-1], dtype=torch.float64), "rescale")
    if cls == "rotary":  # q (and head outputs) move by G, k by G^-T
        def unfolded(x):
            return x.permute(1, 2, 0)  # [H, dh, rows]
        co = [(unfolded(pairs[0][0]), unfolded(pairs[0][1]))]
        contra = [(unfolded(a), unfolded(b)) for a, b in pairs[1:]]
        return Dense(rotary_fit(co, contra, rotated), "rotary")
    raise SymalignError(f"activation matching has no solver for {cls} inside heads; use perm, orthogonal, invertible, "
                        "rescale or rotary")


def _groups(x: torch.Tensor, kv: int) -> torch.Tensor:
    """[rows, H, dh] per query head -> [rows, H_kv, g·dh]: each key/value group as one unit."""
    return x.reshape(x.shape[0], kv, -1)


def _as_rows(x: torch.Tensor, kv: int) -> torch.Tensor:
    """[rows, H, dh] per query head -> [rows·g, H_kv, dh]: a group's query heads as more samples."""
    rows, heads, dh = x.shape
    return x.reshape(rows, kv, heads // kv, dh).transpose(1, 2).reshape(-1, kv, dh)


def activation_match(a: TransformerModel, b: TransformerModel, spec: SymmetrySpec, classes: dict[str, str], data,
                     residual_strategy: str = "all", heads: str = "two-stage", max_examples: int | None = 256,
                     device: torch.device | str = "cpu") -> Transform:
    if residual_strategy not in RESIDUAL_STRATEGIES:
        raise SymalignError(f"unknown residual strategy {residual_strategy!r}; "
                            f"choose from {', '.join(RESIDUAL_STRATEGIES)}")
    if heads not in HEAD_STRATEGIES:
        raise SymalignError(f"unknown head strategy {heads!r}; choose two-stage or monotonic")
    data.check_model(a)
    acts_a, acts_b = collect(a, data, max_examples, device), collect(b, data, max_examples, device)
    out = Transform()
    if classes.get("residual", "none") != "none" and residual_strategy != "identity":
        out["residual"] = _residual(acts_a, acts_b, classes["residual"], residual_strategy,
                                    spec.spaces["residual"].fixes_ones)
    for i in range(a.dims.n_layer):
        p = f"layer.{i}."
        mlp_cls = classes.get("mlp", "none")
        if mlp_cls != "none":
            perm = assignment(pearson(acts_a[p + "mlp"], acts_b[p + "mlp"]))
            if mlp_cls == "scaled_perm":
                scale = acts_a[p + "mlp"].std(0) / acts_b[p + "mlp"][:, perm].std(0).clamp_min(1e-12)
                out[p + "mlp"] = ScaledPermutation(perm, scale)
            else:
                out[p + "mlp"] = Permutation(perm)
        kv, g = a.dims.kv_heads, a.dims.group
        order = torch.arange(kv)
        heads_a, heads_b = acts_a[p + "heads"], acts_b[p + "heads"]
        if classes.get("heads", "none") != "none" and heads == "two-stage":
            order = _heads_two_stage(_groups(heads_a, kv), _groups(heads_b, kv))
            out[p + "heads"] = Permutation(order)
        # B's query heads in A's key/value order, then (grouped queries) each group's own order
        qb = acts_b[p + "q"].reshape(-1, kv, g, a.dims.d_head)[:, order]
        hb = heads_b.reshape(-1, kv, g, a.dims.d_head)[:, order]
        if g > 1 and p + "qheads" in spec.spaces and classes.get("heads", "none") != "none" and heads == "two-stage":
            ha = heads_a.reshape(-1, kv, g, a.dims.d_head)
            perms = [_heads_two_stage(ha[:, h], hb[:, h]) for h in range(kv)]
            eye = torch.eye(g, dtype=torch.float64)
            out[p + "qheads"] = Dense(torch.stack([eye[pm] for pm in perms]), "perm")
            qb = torch.stack([qb[:, h, pm] for h, pm in enumerate(perms)], dim=1)
            hb = torch.stack([hb[:, h, pm] for h, pm in enumerate(perms)], dim=1)
        qb, hb = qb.reshape(qb.shape[0], -1, a.dims.d_head), hb.reshape(hb.shape[0], -1, a.dims.d_head)
        inner = {"qk": [(_as_rows(acts_a[p + "q"], kv), _as_rows(qb, kv)), (acts_a[p + "k"], acts_b[p + "k"][:,
                                                                                                             order])],
                 "vo": [(_as_rows(heads_a, kv), _as_rows(hb, kv))]}
        for kind, pairs in inner.items():
            if classes.get(kind, "none") != "none":
                out[p + kind] = _inner(classes[kind], pairs, spec.spaces[p + kind].rotated)
    return out


def run_activation_matching(inputs: MatchInputs) -> MatchOutput:
    """The `activation` matcher (symalign.match.matchers)."""
    from symalign.data import load_data

    c = inputs.config
    return MatchOutput(activation_match(inputs.a, inputs.b, inputs.spec, inputs.classes, load_data(c.data),
                                        c.residual_strategy, c.head_strategy, c.max_examples, device=inputs.device))
