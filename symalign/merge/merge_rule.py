"""What a merge rule is, and the one registry of them (the built-in catalog is symalign.merge.builtin_rules).

`symalign merge --how`, the Merge page and `merge_models` read what a rule is here: its label,
whether it needs data (Fisher and RegMean read training examples; averaging does not), whether it
needs a base model and how many models it takes. A new rule is one file: a function
`combine(members, MergeInputs) -> logical tensors` and a `register(MergeRule(...))` call. The
declarations stay free of torch (the CLI builds its parser without loading it): a rule names its
function as "module:function", imported when it first runs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from symalign.errors import SymalignError, require_at_least
from symalign.progress import phase
from symalign.registry import Registry, resolve

if TYPE_CHECKING:
    import torch

    from symalign.models.family import TransformerModel

# How models are brought into one basis before they are merged or a task vector is carried
# (`--align` of merge and transport): kept here, free of torch, so the CLI offers it without loading it.
ALIGNS = ("none", "weight", "activation", "learned", "soft")  # none, then the built-in matchers
# Optimal-transport fusion (symalign.merge.ot_fusion): soft plans, so for merging only (never transport,
# whose task vector must stay in a function-preserving basis).
OT_ALIGNS = ("ot-acts", "ot-wts")
MERGE_ALIGNS = ALIGNS + OT_ALIGNS
# A transport may use OT-WTS's exact plans (permutations at equal widths: B's basis, B's function kept); TransFusion's
# Table 1 compares it as its Optimal Transport baseline.
TRANSPORT_ALIGNS = ALIGNS + ("ot-wts",)
OT_SOLVERS = ("emd", "sinkhorn")
# How a transport pairs heads (TransFusion, Table 3): circuit (symalign's: whole-head QK/OV circuits), spectral
# (TransFusion's: the q, k, v singular-value spectra), brute-force (every head pair aligned inside, then paired),
# none (heads kept in order; the maps inside them still aligned).
TRANSPORT_HEAD_STRATEGIES = ("circuit", "spectral", "brute-force", "none")


@dataclass
class MergeInputs:
    """What a rule may read beside the members (models already in one basis)."""

    data: Any = None  # the data source (None for a rule that needs none)
    examples: int = 64  # training examples for statistics (Fisher, Gram matrices)
    seed: int = 0
    device: Any = "cpu"  # torch.device for forward and backward passes
    progress: Callable[[str, int, int], None] | None = None
    parameters: dict = field(default_factory=dict)  # the rule's parameters (its declared defaults filled in)
    has_base: bool = False  # the first member is the base model (a rule with `base` other than "none")
    ot: Any = None  # OT fusion's plan solver (symalign.merge.ot_fusion.OTSettings) for the ot-* rules
    max_examples: int | None = None  # the examples OT-ACTS reads activations on (None: its default, 256)

    def __post_init__(self) -> None:
        require_at_least("--examples", self.examples, 1)  # Fisher of 0 examples is NaN, merged into the weights
        require_at_least("--max-examples", self.max_examples, 1)

    def phase(self, name: str) -> Callable[[int, int], None] | None:
        """A (done, total) progress callback for one named phase of the rule."""
        return phase(self.progress, name)


@dataclass(frozen=True)
class MergeRule:
    name: str
    label: str  # what the Merge page shows
    combine: Callable[[list, MergeInputs], dict] | str  # or "module:function", imported on first use
    needs_data: bool = False
    min_models: int = 2  # models merged, the base included
    # "none": no base; "required": `--base M` names it; "first": the first model is the base (SLERP's t = 0)
    base: str = "none"
    parameters: dict[str, float] = field(default_factory=dict)  # name -> default (`--param NAME=VALUE`)
    requires: str | None = None  # a package the rule runs on (refused in one line when it is missing)
    help: str = ""  # what its parameters mean (the CLI's help, the Merge page)
    bounds: dict[str, tuple[float, float]] = field(default_factory=dict)  # name -> (low, high), inclusive

    def combiner(self) -> Callable[[list, MergeInputs], dict]:
        return resolve(self.combine)

    @property
    def needs_base(self) -> bool:
        """`--base M` names a model the others were fine-tuned from."""
        return self.base == "required"

    @property
    def available(self) -> bool:
        """The package it runs on is installed (checked without importing it)."""
        from importlib.util import find_spec

        return self.requires is None or find_spec(self.requires) is not None

    def fill(self, given: dict[str, float] | None) -> dict[str, float]:
        """The rule's parameters: its defaults overridden by `given`; an unknown name is one line."""
        given = dict(given or {})
        unknown = sorted(set(given) - set(self.parameters))
        if unknown:
            known = ", ".join(f"{k} (default {v:g})" for k, v in self.parameters.items()) or "none"
            raise SymalignError(f"--how {self.name} has no parameter {', '.join(unknown)}; its parameters: {known}")
        for name, value in given.items():
            low, high = self.bounds.get(name, (float("-inf"), float("inf")))
            if not low <= value <= high or value != value:
                raise SymalignError(f"--how {self.name}: {name} = {value:g} is outside [{low:g}, {high:g}]")
        return {**self.parameters, **given}


def install_hint(package: str) -> str:
    """How to get an optional package a rule runs on (each is also an extra of symalign's)."""
    return f'pip install {package} (or pip install -e ".[{package}]")'


_RULES: Registry[MergeRule] = Registry("unknown merge --how {name}; choose {choices}")
register, unregister, merge_rule, merge_rules = _RULES.register, _RULES.unregister, _RULES.get, _RULES.entries


def average(members: list[TransformerModel], inputs: MergeInputs) -> dict[str, torch.Tensor]:
    """The `average` rule: the mean of the (aligned) logical tensors (OT fusion and the merging pipeline both read
    it from here, so neither imports the other)."""
    import torch

    return {n: torch.stack([m.tensors[n].double() for m in members]).mean(0).to(t.dtype)
            for n, t in members[0].tensors.items()}
