"""The symmetry spec: which hidden spaces a network has, which tensor axes each acts on, which
groups are admissible there and, when one is not, why.

It generalises Git Re-Basin's PermutationSpec from permutations to matrix groups: each tensor
maps to one tag per axis naming a space and a variance (``co``: G acts; ``contra``: G^-T acts;
``diag``: elementwise gain). Applying transforms, building matching costs, canonicalising and
the app's per-component toggles all read this one object.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from symalign.errors import InadmissibleError

# `orthogonal+rescale`: a rotation times a positive scalar per head (Zhang et al.'s rescaling as an add-on to
# their rotations: q·s and k/s, or v·s and o/s, keep every head's function).
ROTATE_RESCALE = "orthogonal+rescale"
CLASSES: tuple[str, ...] = ("perm", "scaled_perm", "orthogonal", "invertible", "rescale", "rotary", ROTATE_RESCALE)
# When a preset asks for a class a component refuses (e.g. `all` asks for orthogonal QK maps, which
# RoPE refuses), the widest class it admits stands in: the first admissible one in this order from the
# class asked for on (under RoPE, `full`'s invertible QK maps become rotary ones).
WIDEST: tuple[str, ...] = ("invertible", "orthogonal", "rotary", "rescale", "perm", "none")
KINDS: tuple[str, ...] = ("mlp", "heads", "qk", "vo", "residual", "experts")
# What a dense model has: presets, defaults and sweep tables name these; `experts` (a mixture of experts) is left
# out of them and follows the MLP's class where the model has experts (SymmetrySpec.with_experts).
DENSE_KINDS: tuple[str, ...] = KINDS[:5]
POSITIVELY_HOMOGENEOUS = frozenset({"relu", "leaky_relu"})


@dataclass(frozen=True)
class Tag:
    """One tensor axis: the space it lives in and how a group element reaches it."""

    space: str
    variance: str  # "co" | "contra" | "diag"


@dataclass(frozen=True)
class Space:
    """A hidden space: `count` copies (one per head) of a `size`-dimensional space."""

    name: str
    kind: str
    size: int
    count: int = 1
    batched_by: str | None = None
    refusals: dict[str, str] = field(default_factory=dict)  # class -> reason it is inadmissible
    fixes_ones: bool = False  # orthogonal maps must keep the all-ones vector (a LayerNorm's mean-centring reads it)
    # How many leading coordinates a `rotary` element pairs up (i with i + rotated/2, Hugging Face's
    # rotate_half); the rest get an orthogonal block. None: all of them. Partial rotary (GPT-NeoX's
    # rotary_pct) rotates only the first few dimensions of each head.
    rotated: int | None = None

    @property
    def rotated_dims(self) -> int:
        return self.size if self.rotated is None else self.rotated

    def admits(self, cls: str) -> bool:
        return cls == "none" or (cls in CLASSES and cls not in self.refusals)

    def require(self, cls: str) -> None:
        """Raise InadmissibleError with the spec's reason if `cls` is not admissible here."""
        if cls not in CLASSES and cls != "none":
            raise InadmissibleError(f"unknown symmetry class {cls!r}; choose from none, {', '.join(CLASSES)}")
        if not self.admits(cls):
            raise InadmissibleError(f"{self.name}: {cls} is not admissible: {self.refusals[cls]}")


@dataclass(frozen=True)
class SymmetrySpec:
    """All spaces of one network and the tags of every (logical) tensor."""

    family: str
    spaces: dict[str, Space]
    tensors: dict[str, tuple[Tag | None, ...]]
    canonical: bool

    def batched_in(self, space: str) -> list[Space]:
        """The spaces that exist once per element of `space` (a layer's per-head maps and query heads)."""
        return [s for s in self.spaces.values() if s.batched_by == space]

    def spaces_of_kind(self, kind: str) -> list[Space]:
        return [s for s in self.spaces.values() if s.kind == kind]

    def kinds(self) -> tuple[str, ...]:
        """The component kinds this architecture has, in KINDS order (experts only in a mixture of experts)."""
        present = {s.kind for s in self.spaces.values()}
        return tuple(k for k in KINDS if k in present)

    def axes_of(self, space: str) -> list[tuple[str, int, Tag]]:
        """Every (tensor, axis, tag) the space acts on: the weight-matching cost reads this."""
        return [
            (name, axis, tag)
            for name, tags in self.tensors.items()
            for axis, tag in enumerate(tags)
            if tag is not None and tag.space == space
        ]

    def kind_refusals(self, kind: str) -> dict[str, str]:
        """Refusal reasons shared by every space of a kind (what a per-kind toggle shows)."""
        spaces = self.spaces_of_kind(kind)
        return dict(spaces[0].refusals) if spaces else {c: "this architecture has no such component" for c in CLASSES}

    def with_experts(self, classes: dict[str, str]) -> dict[str, str]:
        """`classes` with the experts' class filled in on a mixture of experts when it is not named: permuted
        when the MLP's units are (to permute MLP units is, where a layer has several MLPs, to pair them
        first), else left in place. A dense model's classes come back as they are."""
        if "experts" in classes or not self.spaces_of_kind("experts"):
            return classes
        return {**classes, "experts": "perm" if classes.get("mlp") in ("perm", "scaled_perm") else "none"}

    def check_classes(self, classes: dict[str, str]) -> None:
        """Refuse a per-kind class choice that any space of that kind does not admit."""
        for kind, cls in classes.items():
            if kind not in KINDS:
                raise InadmissibleError(f"unknown component kind {kind!r}; choose from {', '.join(KINDS)}")
            for space in self.spaces_of_kind(kind):
                space.require(cls)

    def fit(self, classes: dict[str, str]) -> dict[str, str]:
        """A preset made admissible here: each refused class replaced by the widest one the component
        admits (`WIDEST` order), e.g. orthogonal QK maps become rotary ones under RoPE."""
        out = {}
        for kind, cls in classes.items():
            spaces = self.spaces_of_kind(kind)
            if cls not in CLASSES or not spaces or all(s.admits(cls) for s in spaces):  # unknown: check_classes says so
                out[kind] = cls
                continue
            start = WIDEST.index(cls) if cls in WIDEST else 0
            out[kind] = next(c for c in WIDEST[start:] if all(s.admits(c) for s in spaces))
        return out


NORMS = ("layernorm", "rmsnorm", "post-layernorm", "sandwich-rmsnorm", "stream-layernorm")


def refusals_for(kind: str, *, activation: str, canonical: bool, norm: str = "layernorm", rope: bool = False,
                 gated: bool = False, partial: str = "", qk_norm: bool = False) -> dict[str, str]:
    """Why each inadmissible class is refused for a component kind: the human-readable reasons.

    `norm`: where and which normalisation sits on the residual stream; `rope`: rotary position
    embeddings act on q and k; `gated`: a gated MLP (SwiGLU: silu(gate·x) ⊙ up·x); `partial`: e.g.
    "the first 16 of 64 dimensions" when RoPE rotates only part of each head; `qk_norm`: an RMSNorm with
    learned gains over each head's dimensions on q and k (Qwen3)."""
    if kind == "mlp":
        homogeneous = activation in POSITIVELY_HOMOGENEOUS and not gated
        passes = "permutations and positive rescalings" if homogeneous else "permutations"
        rotate = f"the elementwise {activation} commutes only with {passes}; mixing units changes the function"
        if gated:
            rotate = (f"a gated unit multiplies {activation}(gate) by up elementwise: only permutations (gate and up "
                      "rows with the down column) keep the function; mixing units changes it")
        within = "rescaling is a within-head attention symmetry; for MLP units use scaled_perm"
        out = {"orthogonal": rotate, "invertible": rotate, "rotary": rotate, "rescale": within, ROTATE_RESCALE: within}
        if gated:
            out["scaled_perm"] = (f"{activation} is not positively homogeneous, so a gate row cannot be rescaled "
                                  "(a scaled permutation scales gate and up rows alike)")
        elif not homogeneous:
            out["scaled_perm"] = (
                f"{activation} is not positively homogeneous (σ(a·x) ≠ a·σ(x) for a > 0); "
                "scaled permutations need a ReLU MLP"
            )
        return out
    if kind == "heads":
        reason = ("heads are exchanged as whole units, so only permutations exist "
                  "(maps inside a head are the qk and vo components)")
        return {c: reason for c in CLASSES if c != "perm"}
    if kind == "experts":
        reason = ("experts are exchanged as whole units together with their router rows (the top-k choice "
                  "follows them), so only permutations exist (the units inside an expert are its mlp component)")
        return {c: reason for c in CLASSES if c != "perm"}
    if kind == "qk":
        if qk_norm:
            reason = ("q and k pass through an RMSNorm with learned gains (Qwen3's q_norm, k_norm over each head's "
                      "dimensions; OLMoE's over all heads at once): a map inside a head changes what the norm "
                      "divides by and which gain meets which coordinate; even a positive scalar per head, which a "
                      "per-head norm divides out, is off by its ε (q/√(mean q² + ε)), and across heads it changes "
                      "every other head's scale, so no map inside a head keeps the function exactly")
            return dict.fromkeys(CLASSES, reason)
        if not rope:
            return {}
        reason = ("RoPE rotates q and k by a position-dependent angle in each frequency pair: only maps that "
                  "commute with every such rotation keep the function, i.e. a 2×2 rotation and scale per pair "
                  "(class rotary) or a scalar per head (rescale); a general QK map mixes frequencies")
        if partial:
            reason = (f"RoPE rotates {partial} of each head by a position-dependent angle per frequency pair: "
                      "only maps that commute with every such rotation keep the function, i.e. a 2×2 rotation and "
                      "scale per pair there and any orthogonal map on the unrotated rest (class rotary), or a scalar "
                      "per head (rescale); a general QK map mixes rotated with unrotated dimensions")
        return {c: reason for c in ("perm", "scaled_perm", "orthogonal", "invertible", ROTATE_RESCALE)}
    if kind == "vo":
        return {}
    if kind == "residual":
        return _residual_refusals(norm, canonical)
    raise ValueError(f"unknown component kind {kind!r}")


def _residual_refusals(norm: str, canonical: bool) -> dict[str, str]:
    """Which classes the residual stream refuses under its norm (and whether its gains are absorbed yet)."""
    if norm == "post-layernorm":
        reason = "post-LN: LayerNorm acts on the residual stream itself, so the residual admits permutations only"
        return {c: reason for c in CLASSES if c != "perm"}
    if norm == "stream-layernorm":
        reason = ("a LayerNorm writes the residual stream's first value (CLIP's pre_layrnorm): its gains "
                  "multiply the stream coordinate by coordinate with nothing before them to absorb a map, and "
                  "the head reads the stream with no norm between, so only permutations keep the function")
        return {c: reason for c in CLASSES if c != "perm"}
    if norm == "sandwich-rmsnorm":
        reason = ("sandwich norms (Gemma 2): each branch's output passes an RMSNorm whose gains multiply it "
                  "coordinate by coordinate in the residual's basis before it is added, and nothing after can "
                  "absorb them, so only maps that commute with every diagonal gain pass: permutations")
        return {c: reason for c in CLASSES if c != "perm"}
    if norm == "rmsnorm":
        norm_reason = ("RMSNorm divides every token by its norm across the residual, so only norm-preserving "
                       "maps pass through it: permutations, and orthogonal maps once its gains are absorbed")
    else:
        norm_reason = (
            "LayerNorm divides every token by its norm across the residual, so only maps that keep norms "
            "and the all-ones direction pass through it: permutations, and orthogonal maps in canonical form"
        )
    out = {c: norm_reason for c in ("scaled_perm", "invertible", "rescale", "rotary", ROTATE_RESCALE)}
    if not canonical:
        absorbed = "RMSNorm gains are" if norm == "rmsnorm" else "LayerNorm γ and β are"
        what = ("(gains folded into the next layers)" if norm == "rmsnorm"
                else "(γ, β folded into the next layers, writers centred)")
        out["orthogonal"] = (
            f"{absorbed} not absorbed yet: orthogonal residual maps need the canonical form "
            f"{what}; run `symalign canonicalize` first"
        )
    return out


def parse_tag(text: str | None, layer: int | None) -> Tag | None:
    """'heads:co' in layer 3 -> Tag('layer.3.heads', 'co'); 'residual:contra' stays global."""
    if text is None:
        return None
    space, variance = text.split(":")
    if space != "residual":
        space = f"layer.{layer}.{space}"
    return Tag(space, variance)
