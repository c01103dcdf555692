"""The matchers symalign offers, in one registry.

The command line's `--method` choices, the Align and Simplex pages' lists, sweeps (which rows a
seed repeats) and the run views read what a matcher is here; `align` runs it from here. A new
matcher is one file: a function `run(MatchInputs) -> MatchOutput` and a `register(Matcher(...))`
call. Declarations stay free of torch (the CLI builds its parser without loading it): a matcher
names its function as "module:function", imported when it first runs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from symalign.match.activation.options import ACTIVATION_OPTIONS
from symalign.match.learned.options import LEARNED_OPTIONS
from symalign.match.options import Option
from symalign.match.weight.options import WEIGHT_OPTIONS
from symalign.registry import Registry, resolve

# The built-in matchers' options, each declared beside its matcher, in one order.
BUILTIN_OPTIONS: tuple[Option, ...] = WEIGHT_OPTIONS + LEARNED_OPTIONS + ACTIVATION_OPTIONS
_BUILTIN_DEFAULTS = {o.name: o.default for o in BUILTIN_OPTIONS}


def declared_default(name: str):
    """A built-in option's declared default: what AlignConfig's and LearnedOptions' fields start from."""
    return _BUILTIN_DEFAULTS[name]


@dataclass
class MatchInputs:
    """What every matcher is given: canonical A and B, B's spec, the classes to use (none left out),
    the whole AlignConfig (a matcher reads its own options from it), the torch device and progress."""

    a: Any  # TransformerModel
    b: Any
    spec: Any  # SymmetrySpec
    classes: dict[str, str]
    config: Any  # AlignConfig
    device: Any  # torch.device
    progress: Callable[[int, int], None] | None = None
    own_b: bool = False  # B is handed over (nobody else holds its tensors): a matcher may use it up
    frozen: frozenset[str] = frozenset()  # spaces that stay at the identity (`--layers`: the other blocks')


@dataclass
class MatchOutput:
    transform: Any  # Transform: B's elements, on the CPU
    sweeps: list = field(default_factory=list)  # SweepRecord: weight matching's history (also a learned run's start)
    learned: list = field(default_factory=list)  # LearnedStep: per learned step
    learned_summary: Any = None  # LearnedSummary (symalign.match.results)
    start: Any = None  # learned / soft: the transform they started from
    # B's tensors under `transform`, when the matcher built them itself from a B it was handed (weight
    # matching at real scale: its working copy, so B never exists twice); None: align applies the transform
    aligned: Any = None


@dataclass(frozen=True)
class Matcher:
    name: str
    help: str  # one line: the CLI's and the pages' description
    run: Callable[[MatchInputs], MatchOutput] | str  # or "module:function", imported on first use
    needs_data: bool = False  # matches on activations or the task loss: --data is required
    universe: bool = False  # also aligns three or more models into one basis (align-many, simplex)
    stochastic: bool = False  # its result depends on --seed: sweeps repeat its rows per seed
    learns: bool = False  # keeps learned corrections beside its start (spectra, learned options apply)
    relaxed: bool = False  # learned matchers: permutations relaxed to doubly stochastic matrices (Sinkhorn)
    # What it reads from AlignConfig (symalign.match.options): its flags, sweep keys and checks come from here.
    options: tuple[Option, ...] = ()

    def runner(self) -> Callable[[MatchInputs], MatchOutput]:
        return resolve(self.run)


_MATCHERS: Registry[Matcher] = Registry("unknown method {name}; choose from {choices}")
register, unregister, matcher = _MATCHERS.register, _MATCHERS.unregister, _MATCHERS.get


def matchers(universe: bool = False) -> dict[str, Matcher]:
    """Every registered matcher (in registration order); `universe`: only those that align three or more."""
    return {n: m for n, m in _MATCHERS.entries().items() if m.universe or not universe}


def method_names(universe: bool = False) -> tuple[str, ...]:
    return tuple(matchers(universe))


def _declared(method: str) -> tuple[Option, ...]:
    return tuple(o for o in BUILTIN_OPTIONS if method in o.methods)


def _identity(inputs: MatchInputs) -> MatchOutput:
    from symalign.symmetry.transform import Transform

    return MatchOutput(Transform())


register(Matcher("none", "no alignment: the vanilla barrier", _identity, universe=True))
register(Matcher("weight", "data-free: coordinate descent over components (Git Re-Basin), closed-form rotations",
                 "symalign.match.weight.descent:run_weight_matching", universe=True, options=_declared("weight")))
register(Matcher("activation", "match activations on data (needs a data set)",
                 "symalign.match.activation.matching:run_activation_matching", needs_data=True,
                 options=_declared("activation")))
register(Matcher("learned", "optimise the group elements for low loss along the path (needs data)",
                 "symalign.match.learned.optimisation:run_learned_matching", needs_data=True, universe=True,
                 stochastic=True, learns=True, options=_declared("learned")))
register(Matcher("soft", "Sinkhorn relaxation of the permutations, learned like `learned` (needs data)",
                 "symalign.match.learned.optimisation:run_learned_matching", needs_data=True, universe=True,
                 stochastic=True, learns=True, relaxed=True, options=_declared("soft")))


def options_of(method: str) -> dict[str, Option]:
    """The options a method reads, by name."""
    return {o.name: o for o in matcher(method).options}


def all_options(universe: bool | None = None) -> dict[str, Option]:
    """Every declared option of every registered matcher (first declaration wins), in order.
    `universe` True: those of the matchers that align three or more models (align-many, simplex);
    False: those a two-model alignment reads (no option read only by three or more); None: all."""
    out: dict[str, Option] = {}
    for m in matchers(universe=bool(universe)).values():
        for o in m.options:
            if universe is False and o.universe_only:
                continue
            out.setdefault(o.name, o)
    return out
