"""Models of different widths: a narrow model re-expressed in a wide model's basis, same function.

Every hidden space of the narrow model maps into the wide model's by a rectangular map M (N×n)
with a left inverse M⁺ (M⁺M = I): axes that write the space (``co``) get M, axes that read it
(``contra``) get M⁺ᵀ, so every contraction is unchanged, exactly as for a square group element.

- MLP units and heads: a partial permutation. The narrow units become the first n; the new ones
  have zero weights in and out (and a zero bias), so they add nothing.
- Residual: LayerNorm normalises over the *whole* residual, so zero-padding alone would change its
  variance (‖x‖²/N instead of ‖x‖²/n) and, for vectors that are not mean-free, its mean. In
  canonical form every residual vector is mean-free (writers centred), so we use
  M = √(N/n)·E with E = J + (u_N − J·u_n)·u_nᵀ: J the injection, u the unit all-ones vectors.
  E is semi-orthogonal, maps u_n to u_N (mean-free stays mean-free, the β = 1 of a bias-free head
  stays 1) and equals J on mean-free vectors; the factor √(N/n) keeps the variance, so LayerNorm of
  the wide vector is M times LayerNorm of the narrow one, ε included. It is the semi-orthogonal
  embedding closest to the injection, so a residual *permutation* class still reads as a partial
  permutation, and residual orthogonal maps reach every other semi-orthogonal embedding.
- Per-head spaces (qk, vo) must have equal sizes: the attention scale 1/√d_head is not a map
  between hidden spaces, so heads of different sizes cannot be embedded exactly.

Matching then runs unchanged on two models of the wide shape: the wide group acting on the
embedded model reaches every partial permutation and every admissible semi-orthogonal embedding.
"""

from __future__ import annotations

import torch

from symalign.errors import ArchitectureMismatchError
from symalign.models.canonical import canonicalize
from symalign.models.compat import check_compatible, check_same_kind
from symalign.models.family import TransformerModel
from symalign.symmetry.groups import _along

WidthNote = dict  # {"embedded": "a" | "b", "from": {space kind: size}, "to": {...}}


def _widths(model: TransformerModel) -> dict[str, int]:
    d = model.dims
    return {"residual": d.d_model, "mlp": d.d_mlp, "heads": d.n_head, "head size": d.d_head, "layers": d.n_layer}


def _describe(w: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in w.items() if k not in ("head size", "layers"))


def width_summary(model: TransformerModel) -> str:
    """'residual 48, mlp 96, heads 3': what the app says when two widths differ."""
    return _describe(_widths(model))


def same_widths(a: TransformerModel, b: TransformerModel) -> bool:
    return _widths(a) == _widths(b)


def check_embeddable(narrow: TransformerModel, wide: TransformerModel) -> None:
    """Refuse, in one line, a pair where `narrow` cannot be embedded in `wide` exactly."""
    check_same_kind(narrow, wide)
    wn, ww = _widths(narrow), _widths(wide)
    if narrow.dims.norm != "layernorm" or wide.dims.norm != "layernorm" or narrow.dims.group != 1:
        raise ArchitectureMismatchError(
            f"models of different widths are embedded for pre-LN LayerNorm families without grouped queries "
            f"(GPT-2, ViT); this pair is {narrow.family.name} ({narrow.dims.norm}): align models of one width")
    if wn["layers"] != ww["layers"]:
        raise ArchitectureMismatchError(f"models differ in depth ({wn['layers']} vs {ww['layers']} layers); "
                                        "only widths can differ")
    if wn["head size"] != ww["head size"]:
        raise ArchitectureMismatchError(
            f"models differ in head size ({wn['head size']} vs {ww['head size']}): the attention scale 1/√d_head "
            "is not a map between hidden spaces, so only models with equal head sizes can be embedded"
        )
    wider = [k for k in ("residual", "mlp", "heads") if wn[k] > ww[k]]
    if wider:
        raise ArchitectureMismatchError(
            f"neither model is at most as wide as the other in every component ({_describe(wn)} vs "
            f"{_describe(ww)}): the narrow one must fit inside the wide one"
        )


def residual_embedding(n: int, big: int) -> torch.Tensor:
    """E (big×n): semi-orthogonal, E·u_n = u_big, equal to the injection on mean-free vectors."""
    j = torch.eye(big, n, dtype=torch.float64)
    u_n = torch.full((n, 1), n ** -0.5, dtype=torch.float64)
    u_big = torch.full((big, 1), big ** -0.5, dtype=torch.float64)
    return j + (u_big - j @ u_n) @ u_n.T


def _maps(narrow: TransformerModel, wide: TransformerModel) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """Per space kind: (M for co axes, M⁺ᵀ for contra axes)."""
    dn, dw = narrow.dims, wide.dims
    e = residual_embedding(dn.d_model, dw.d_model)
    scale = (dw.d_model / dn.d_model) ** 0.5
    return {
        "residual": (scale * e, e / scale),
        "mlp": (torch.eye(dw.d_mlp, dn.d_mlp, dtype=torch.float64),) * 2,
        "heads": (torch.eye(dw.n_head, dn.n_head, dtype=torch.float64),) * 2,
    }


def _constant_along(t: torch.Tensor, axis: int, size: int, name: str) -> torch.Tensor:
    value = t.select(axis, 0).unsqueeze(axis)
    if not torch.allclose(t, value.expand_as(t), rtol=1e-6, atol=1e-7):
        raise ArchitectureMismatchError(f"{name}: a LayerNorm gain that is not constant cannot be embedded "
                                        "(canonical form makes it 1)")
    shape = list(t.shape)
    shape[axis] = size
    return value.expand(shape).clone()


def embed(narrow: TransformerModel, wide: TransformerModel) -> TransformerModel:
    """The narrow model's function as a model of the wide model's (canonical) shape and config."""
    check_embeddable(narrow, wide)
    small, big = canonicalize(narrow), canonicalize(wide)
    spec, big_spec = small.family.spec(small.config, True), big.family.spec(big.config, True)
    maps = _maps(small, big)
    out = {}
    for name, t in small.tensors.items():
        work = t.to(torch.float64)
        for axis, tag in enumerate(spec.tensors[name]):
            if tag is None:
                continue
            kind = spec.spaces[tag.space].kind
            if kind not in maps:  # qk, vo: equal sizes (checked), nothing to embed
                continue
            if tag.variance == "diag":
                work = _constant_along(work, axis, big_spec.spaces[tag.space].size, name)
            else:
                co, contra = maps[kind]
                work = _along(work, axis, co if tag.variance == "co" else contra, None)
        target = big.tensors[name]
        if work.shape != target.shape:
            raise ArchitectureMismatchError(f"{name}: embedded shape {tuple(work.shape)} does not match the wide "
                                            f"model's {tuple(target.shape)}")
        out[name] = work.to(target.dtype)
    return big.with_tensors(out, source=narrow.source)


def match_widths(a: TransformerModel, b: TransformerModel) -> tuple[TransformerModel, TransformerModel, WidthNote]:
    """Two models of one shape: unchanged when their shapes already agree, else the narrower one
    embedded in the wider one's basis (refused in one line when neither fits in the other)."""
    if same_widths(a, b):
        check_compatible(a, b)
        return a, b, {}
    check_same_kind(a, b)
    wa, wb = _widths(a), _widths(b)
    a_fits = all(wa[k] <= wb[k] for k in ("residual", "mlp", "heads"))
    if a_fits:
        check_embeddable(a, b)
        return embed(a, b), b, {"embedded": "a", "from": wa, "to": wb}
    check_embeddable(b, a)
    return a, embed(b, a), {"embedded": "b", "from": wb, "to": wa}


def check_pair(a: TransformerModel, b: TransformerModel) -> None:
    """Refuse, in one line, two models that can be compared neither as they are nor after
    embedding the narrower one in the wider one's basis."""
    if same_widths(a, b):
        check_compatible(a, b)
        return
    check_same_kind(a, b)
    wa, wb = _widths(a), _widths(b)
    if all(wa[k] <= wb[k] for k in ("residual", "mlp", "heads")):
        check_embeddable(a, b)
    else:
        check_embeddable(b, a)
