"""Canonical form of a pre-norm transformer, in which the residual stream admits orthogonal maps
(with Q·1 = 1 under LayerNorm; any orthogonal Q under RMSNorm).

RMSNorm(x) = γ ⊙ x / rms(x) has no mean and no bias: folding γ into its readers (W ← W diag(γ))
leaves x / rms(x), which commutes with every orthogonal Q. A post-LN model has nothing to fold:
its LayerNorms sit on the residual stream itself, which admits permutations only.

LayerNorm(x) = γ ⊙ C x / σ(x) + β with C = I − 11ᵀ/d. We fold γ and β into the layers that read
the norm (W ← W diag(γ), b ← b + Wβ), project every reader onto the complement of the all-ones
direction (W ← W C: its input is mean-free anyway) and centre every residual writer (x ← Cx:
every reader normalises Cx, so nothing downstream changes). Then LayerNorm is γ = 1, β = 0 and
commutes with any orthogonal Q that fixes 1. A final head without a bias (GPT-2's LM head)
cannot take Wβ as a bias; there β becomes the constant vector 1, which Q fixes, and the head
keeps Wβ/d along its all-ones direction, the one direction its mean-free input never uses.
"""

from __future__ import annotations

import weakref

import torch

from symalign.models.family import Tensors, TransformerModel
from symalign.models.layout import layer_name


def norm_groups(family, config, n_layer: int) -> list[tuple[str, tuple[str, ...]]]:
    """Each norm and the tensors that read it (what the canonical form folds its gain into), final norm last."""
    groups = [(layer_name(i, ln), tuple(layer_name(i, r) for r in readers))
              for i in range(n_layer) for ln, readers in family.norm_readers.items()]
    return groups + [("norm", tuple(family.final_norm_readers(config)))]


def _norm_groups(model: TransformerModel) -> list[tuple[str, tuple[str, ...]]]:
    return norm_groups(model.family, model.config, model.dims.n_layer)


def _center(t: torch.Tensor, axis: int) -> torch.Tensor:
    """Subtract the mean along `axis` in place (`t` is always a private float64 working copy)."""
    return t.sub_(t.mean(dim=axis, keepdim=True))


ROWS_PER_CHUNK = 4096  # rows of a reader folded at a time (a GPT-2 LM head is 50,257 rows)
CENTRE_WHOLE = 1 << 22  # elements up to which a writer is centred in one float64 piece (every zoo tensor)


def _centred_in_blocks(t: torch.Tensor, axes: list[int], dtype: torch.dtype) -> torch.Tensor:
    """`t` centred along `axes` in float64, one block along another axis at a time: the means are
    taken within each block's own fibres, so the blocks give the whole tensor's result."""
    free = next((ax for ax in range(t.dim()) if ax not in axes), None)
    if free is None:
        value = t.to(torch.float64, copy=True)
        for axis in axes:
            value = _center(value, axis)
        return value.to(dtype)
    out = torch.empty(t.shape, dtype=dtype)
    step = max(1, CENTRE_WHOLE // max(t.numel() // t.shape[free], 1))  # slices of about CENTRE_WHOLE elements
    for i in range(0, t.shape[free], step):
        block = t.narrow(free, i, min(step, t.shape[free] - i)).to(torch.float64, copy=True)
        for axis in axes:
            block = _center(block, axis)
        out.narrow(free, i, block.shape[free]).copy_(block)
    return out


def _fold_reader(w: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, onto_ones: bool,
                 out_dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """A LayerNorm reader W [..., d] with γ and β folded in: (centre(W·diag(γ)) [+ Wβ/d on the
    all-ones direction when it has no bias], Wβ), computed in float64 a block of rows at a time.
    Every operation acts row by row, so the blocks give exactly the whole-tensor result; only one
    block is ever held in float64 (a whole LM head would be 0.3 GB, several times over)."""
    d = w.shape[-1]
    rows = w.reshape(-1, d)
    folded = torch.empty(rows.shape, dtype=out_dtype)
    w_beta = torch.empty(rows.shape[0], dtype=torch.float64)
    for i in range(0, rows.shape[0], ROWS_PER_CHUNK):
        block = rows[i:i + ROWS_PER_CHUNK].to(torch.float64)
        block_beta = (block * beta).sum(-1)  # W β, contracting the residual (last) axis
        centred = _center(block * gamma, -1)
        if onto_ones:
            centred = centred + block_beta[..., None] / d
        folded[i:i + ROWS_PER_CHUNK] = centred.to(out_dtype)
        w_beta[i:i + ROWS_PER_CHUNK] = block_beta
    return folded.reshape(w.shape), w_beta.reshape(w.shape[:-1])


def norm_parameters(model: TransformerModel) -> set[str]:
    """The norms' γ and β of a pre-norm model: constants of its canonical form (γ = 1, β ∈ {0, 1}), so
    anything that moves a canonical model along a path (a curve's bend) keeps them where they are.
    Empty for post-LN models, whose norms sit on the residual stream and are not folded."""
    if not model.dims.folds_norms:
        return set()
    return {f"{norm}.{part}" for norm, _ in _norm_groups(model) for part in ("weight", "bias")
            if f"{norm}.{part}" in model.tensors}


def _ones_fraction(t: torch.Tensor, axis: int) -> float:
    """How much of `t` lies along the all-ones direction of `axis`: ‖(t·1/√d) per fibre‖ / ‖t‖ (0 for a
    tensor that is mean-free along `axis`). Read in float64 a block at a time: no float64 copy of a
    whole LM head or token embedding."""
    d = t.shape[axis]
    moved = t.movedim(axis, -1).reshape(-1, d)
    along, total = 0.0, 0.0
    for i in range(0, moved.shape[0], ROWS_PER_CHUNK):
        block = moved[i:i + ROWS_PER_CHUNK].to(torch.float64)
        along += float((block.sum(-1) ** 2).sum()) / d
        total += float((block ** 2).sum())
    return (along / total) ** 0.5 if total > 0 else 0.0


def ones_tolerance(dtype: torch.dtype, d: int) -> float:
    """The ones-direction fraction that rounding alone leaves in a canonical tensor of `dtype` (each
    entry off by about eps·|w|, so its fibre's ones component by about eps·|w|, a 1/√d share of the
    fibre's norm), with room: 16·eps/√d, at least 1e-6. A random reader has about 1/√d, thousands of
    times more in float32 and eight times more in bfloat16."""
    return max(16 * torch.finfo(dtype).eps / d ** 0.5, 1e-6)


def _writer_axes(model: TransformerModel) -> dict[str, list[int]]:
    """Every residual writer (a residual axis on the output side) and its residual axes, the norms'
    own biases excepted (their canonical β is 0 or 1 by construction)."""
    spec = model.family.spec(model.config, canonical=False)
    norm_biases = {f"{norm}.bias" for norm, _ in _norm_groups(model)}
    axes = {name: [axis for axis, tag in enumerate(tags)
                   if tag is not None and tag.space == "residual" and tag.variance == "co"]
            for name, tags in spec.tensors.items() if name not in norm_biases}
    return {name: a for name, a in axes.items() if a}


CONFIG_KEYS = ("tie_word_embeddings", "qkv_bias")  # what the canonical config sets (head untied, ViT's q/k/v biases)


def canonical_form_gaps(model: TransformerModel) -> list[str]:
    """Why `model` is not what canonicalize() returns, one line a reason (empty when it is): γ = 1 and
    β ∈ {0, 1} exactly, the config canonicalize() gives (head untied, ViT's q/k/v biases), and under
    LayerNorm every reader mean-free along the residual (its input is) and every residual writer
    centred, both within `ones_tolerance`. γ = 1, β = 0 alone is every freshly initialised model,
    whose readers and writers are random: the norms' values say nothing about the projection."""
    norm_kind = model.dims.norm
    if not model.dims.folds_norms:
        return []
    gaps = []
    canonical_config = model.family.canonical_config(model.config).to_dict()
    config = model.config.to_dict()
    gaps += [f"config {key} is {config.get(key)!r}, canonical {value!r}" for key, value in canonical_config.items()
             if config.get(key) != value and key in CONFIG_KEYS]
    zero_beta_norms = set()
    for norm, _ in _norm_groups(model):
        gamma, beta = model.tensors[f"{norm}.weight"], model.tensors.get(f"{norm}.bias")
        if not bool((gamma == 1).all()):
            gaps.append(f"{norm}.weight is not exactly 1")
        if beta is not None and not (bool((beta == 0).all()) or bool((beta == 1).all())):
            gaps.append(f"{norm}.bias is neither 0 nor 1")
        if beta is None or bool((beta == 0).all()):
            zero_beta_norms.add(norm)
    if gaps or norm_kind != "layernorm":
        return gaps  # RMSNorm's canonical form is γ = 1 and the config; nothing is projected
    names = set(model.tensors)
    for norm, readers in _norm_groups(model):
        for reader in readers:
            if norm not in zero_beta_norms and f"{reader}.bias" not in names:
                continue  # a bias-free head fed β = 1 keeps its bias on the ones direction
            w = model.tensors[f"{reader}.weight"]
            fraction, tol = _ones_fraction(w, -1), ones_tolerance(w.dtype, w.shape[-1])
            if fraction > tol:
                gaps.append(f"{reader}.weight has {fraction:.2e} of its norm along the residual's ones vector "
                            f"(reads a mean-free input; canonical ≤ {tol:.0e})")
    for name, axes in _writer_axes(model).items():
        t = model.tensors[name]
        for axis in axes:
            fraction, tol = _ones_fraction(t, axis), ones_tolerance(t.dtype, t.shape[axis])
            if fraction > tol:
                gaps.append(f"{name} has {fraction:.2e} of its norm along the residual's ones vector "
                            f"(a residual writer; canonical ≤ {tol:.0e})")
    return gaps


_VERIFIED = "_symalign_canonical_stamp"  # set on a model object once the check found it canonical


def _config_values(model: TransformerModel) -> tuple:
    return tuple(getattr(model.config, key, None) for key in CONFIG_KEYS)


def _stamp(model: TransformerModel) -> tuple:
    """What the verdict of a check depends on, as it is now: the config keys the check reads, each tensor's
    name, identity (a weak reference: a freed tensor never matches again) and in-place version."""
    return _config_values(model), tuple((name, weakref.ref(t), t._version) for name, t in model.tensors.items())


def _still_verified(model: TransformerModel) -> bool:
    stamp = getattr(model, _VERIFIED, None)
    if stamp is None:
        return False
    config, tensors = stamp
    now = model.tensors
    return (config == _config_values(model)
            and len(tensors) == len(now)
            and all(_same(now.get(name), ref(), version) for name, ref, version in tensors))


def _same(now: torch.Tensor | None, checked: torch.Tensor | None, version: int) -> bool:
    """The tensor under a name is the one checked (alive: a freed one never matches) and unchanged in place."""
    return checked is not None and now is checked and checked._version == version


def mark_verified(model: TransformerModel) -> None:
    """Remember on `model` that it passed the check, until a tensor or the config changes."""
    try:
        stamp = _stamp(model)
    except (RuntimeError, TypeError):  # a tensor without a version counter (inference mode): nothing remembered
        return
    object.__setattr__(model, _VERIFIED, stamp)  # frozen dataclass: the stamp is not a field


def carry_verified(source: TransformerModel, copy: TransformerModel) -> None:
    """`copy` holds bit-identical clones of `source`'s tensors and an equal config: it has the same verdict."""
    if _still_verified(source):
        mark_verified(copy)


def is_canonical(model: TransformerModel) -> bool:
    """True when `model` is in the canonical form canonicalize() gives (see `canonical_form_gaps`):
    canonicalize() returns such a model as it is, and any other model folded and projected.

    A model found canonical keeps that verdict on itself while its tensors and config are the ones checked:
    a sweep or a report checks the same model object many times (693 checks of 7-11 ms in the report's quick
    check), and a tensor replaced in the dict or changed in place (its `_version`) is checked again."""
    if _still_verified(model):
        return True
    if canonical_form_gaps(model):
        return False
    mark_verified(model)
    return True


def canonicalize(model: TransformerModel, consume: bool = False) -> TransformerModel:
    """The same function with the norms' γ (and β) absorbed and, under LayerNorm, the residual stream mean-free.

    Each tensor is computed in float64 and rounded once at the end, one at a time, so the working
    memory is one tensor's float64 copy, not the model's; tensors that nothing touches are shared.
    `consume`: the caller hands `model` over (a workflow that loaded it from disk): each raw tensor
    is dropped from it as soon as it has been read, so the raw and the canonical model never exist
    side by side (a real checkpoint: 4 bytes per parameter less at the peak); `model` is left empty."""
    norm_kind = model.dims.norm
    if is_canonical(model):  # post-LN, or verified: folding again would change nothing but rounding
        return model
    dtype = next(iter(model.tensors.values())).dtype
    groups = _norm_groups(model)
    centred_axes = _writer_axes(model) if norm_kind == "layernorm" else {}
    work: Tensors = {}  # float64 values of tensors that a later step changes again
    order = list(model.tensors)
    names = set(order)
    raw: Tensors = model.tensors if consume else dict(model.tensors)  # each raw tensor is read once, then let go
    out: Tensors = {}

    def get(name: str) -> torch.Tensor:
        return work.pop(name) if name in work else raw.pop(name).to(torch.float64, copy=True)

    def put(name: str, value: torch.Tensor) -> None:
        """Keep float64 while the residual centring still has to act on it, else round now."""
        if name in centred_axes:
            work[name] = value
        else:
            out[name] = value.to(dtype)

    for norm, readers in groups:
        gamma = get(f"{norm}.weight")
        if norm_kind == "rmsnorm":
            for reader in readers:
                put(f"{reader}.weight", get(f"{reader}.weight") * gamma)
            put(f"{norm}.weight", torch.ones_like(gamma))
            continue
        beta = get(f"{norm}.bias")
        new_beta = torch.zeros_like(beta)
        for reader in readers:
            name = f"{reader}.weight"
            has_bias = f"{reader}.bias" in names
            source = work.pop(name) if name in work else raw.pop(name)
            folded, w_beta = _fold_reader(source, gamma, beta, not has_bias,
                                          torch.float64 if name in centred_axes else dtype)
            if has_bias:
                put(f"{reader}.bias", get(f"{reader}.bias") + w_beta)
            else:  # no bias to take W β: kept on the all-ones direction, fed by β = 1
                new_beta = torch.ones_like(beta)
            put(name, folded)
            del source, folded
        put(f"{norm}.weight", torch.ones_like(gamma))
        put(f"{norm}.bias", new_beta)
    for name, axes in centred_axes.items():
        if name in work or raw[name].numel() <= CENTRE_WHOLE:
            value = get(name)
            for axis in axes:
                value = _center(value, axis)
            out[name] = value.to(dtype)
        else:  # a token embedding: centred a block at a time (a float64 copy of it would be 0.3 GB at GPT-2-small)
            out[name] = _centred_in_blocks(raw.pop(name), axes, dtype)
    out.update(raw)  # what nothing touched: shared with the raw model
    raw.clear()
    return model.with_tensors({k: out[k] for k in order}, config=model.family.canonical_config(model.config))


def admits_residual_rotation(model: TransformerModel, rtol: float = 1e-5) -> bool:
    """True when every norm has a constant γ and (LayerNorm) a β along 1: exactly what lets an
    orthogonal Q (with Q·1 = 1 under LayerNorm) pass through all of them and keep the function. It
    does not say the model is canonical: a fresh model (γ = 1, β = 0) admits rotations, but its
    readers are not projected, so it is not in the basis that matching compares in (`is_canonical`)."""
    def constant(v: torch.Tensor | None) -> bool:
        return v is None or bool((v - v.mean()).abs().max() <= rtol * max(1.0, float(v.abs().max())))

    if not model.dims.folds_norms:
        return True  # nothing to absorb: the residual admits permutations only
    return all(
        constant(model.tensors[f"{norm}.weight"]) and constant(model.tensors.get(f"{norm}.bias"))
        for norm, _ in _norm_groups(model)
    )
