"""Matcher options, declared once: name, type, default, choices or range, one line of help, and the
methods that read each.

Why one declaration: an option used to be written out in the config, the CLI flags, a list of
names the CLI copied into the config, the sweep rows' keys, the pages and the README, and the
copies drifted (`--residual-strategy separate` was offered and always refused). From these
declarations come the `align`/`align-many`/`simplex` flags (symalign.cli.common.add_option_flags),
AlignConfig's checks, the keys a sweep row may carry (symalign.sweeps.grid) and docs/options.md.
A matcher registered with `options=(Option(...), ...)` (symalign.match.matchers) adds its own;
their values reach it in `AlignConfig.options`. Torch-free, so the CLI builds its parser fast."""

from __future__ import annotations

from dataclasses import dataclass

from symalign.data.defaults import IMAGE_LEARNED_DEFAULTS, TEXT_LEARNED_DEFAULTS
from symalign.errors import SymalignError

LAMBDA_SAMPLERS = ("uniform_mid", "half", "uniform", "normal")
LEARNED_STARTS = ("weight", "activation", "auto", "identity")
RESIDUAL_STRATEGIES = ("all", "first", "last", "identity")
HEAD_STRATEGIES = ("two-stage", "monotonic", "ignore")  # ignore: monotonic's old name (stored runs)
HEAD_COSTS = ("circuit", "spectral", "brute-force")
LEARNERS = ("learned", "soft")
CHECK_POINTS = ("path", "midpoint")
PRECISIONS = ("float32", "float64")


@dataclass(frozen=True)
class Option:
    """One setting a matcher reads, declared once: the CLI flag and its help, AlignConfig's and LearnedOptions'
    defaults, the Align page's widget, docs/options.md and the sweep keys all read it. `by_data`: the default
    is the data's (symalign.data.defaults: images and text may differ), written into the run's record."""

    name: str  # the AlignConfig field (or key of AlignConfig.options) and the sweep key; the flag is --name-with-dashes
    kind: type  # int, float, str or bool (a bool defaulting to True is the flag --no-NAME)
    default: object
    help: str
    methods: tuple[str, ...]  # the matchers that read it
    choices: tuple[str, ...] | None = None
    minimum: float | None = None  # values below are refused
    universe_only: bool = False  # read only when three or more models are aligned
    auto: bool = False  # None is a value the run works out (e.g. sized from the steps), not "no limit"
    by_data: bool = False  # None: the data's default (symalign.data.defaults.learned_defaults)

    @property
    def default_text(self) -> str:
        """The default as the help, the page and docs/options.md say it, from the one place it is written."""
        if self.by_data:
            image, text = IMAGE_LEARNED_DEFAULTS[self.name], TEXT_LEARNED_DEFAULTS[self.name]
            return f"the data's: {image}" if image == text else f"the data's: images {image}, text {text}"
        return "" if self.default is None else str(self.default)

    @property
    def help_line(self) -> str:
        """The help with its default, for the CLI flag."""
        return self.help + (f" (default: {self.default_text})" if self.default_text else "")

    @property
    def flag(self) -> str:
        name = self.name.replace("_", "-")
        return f"--no-{name}" if self.kind is bool and self.default is True else f"--{name}"

    def check(self, value) -> None:
        """One line naming the option and what it takes, for a value it does not take."""
        if value is None:
            return
        if self.kind is bool:
            if not isinstance(value, bool):
                raise SymalignError(f"{self.name} takes true or false; got {value!r}")
            return
        if self.choices is not None and value not in self.choices:
            raise SymalignError(f"{self.flag}: unknown value {value!r}; choose from {', '.join(self.choices)}")
        if self.kind in (int, float) and (isinstance(value, bool) or not isinstance(value, (int, float))
                                          or (self.kind is int and not float(value).is_integer())):
            raise SymalignError(f"{self.flag} takes {'an integer' if self.kind is int else 'a number'}; got {value!r}")
        if self.minimum is not None and value < self.minimum:
            raise SymalignError(f"{self.flag} must be at least {self.minimum:g}; got {value}")


# The built-in matchers' options (each matcher's registration in symalign.match.matchers names them).
BUILTIN_OPTIONS: tuple[Option, ...] = (
    Option("head_cost", str, "circuit", "weight: how two heads are compared: their QK/VO circuits (no map inside "
           "a head changes them), the spectra of q, k, v (TransFusion), or brute force (TransFusion's ablation: "
           "each head pair aligned inside first, by the QK/VO class, and scored by what that reaches)",
           ("weight",), HEAD_COSTS),
    Option("max_sweeps", int, 30, "weight: at most this many sweeps", ("weight",), minimum=1),
    Option("max_seconds", float, None, "weight: stop after the sweep that passes this many seconds", ("weight",),
           minimum=0),
    Option("min_improvement", float, 1e-5, "weight: stop when a sweep shrinks the distance ‖A − T(B)‖/‖A‖ by less "
           "than this fraction of it", ("weight",), minimum=0),
    Option("precision", str, None, "weight: float32 or float64 for the cost matmuls and the steps (correlations "
           "are summed and solved in float64 either way); default: float32 above 50M parameters, where it halves "
           "the time, float64 below", ("weight",), PRECISIONS, auto=True),
    Option("barrier_per_sweep", int, 0, "weight: also measure the loss and accuracy barrier on this many λ points "
           "before the first sweep and after each one (0: off; e.g. 11), so one run gives the barrier-vs-iterations "
           "curve (Theus et al. Fig. 6); evaluates on the eval split of --data or the pair's training data",
           ("weight",), minimum=0),
    Option("rounds", int, 0, "weight, three or more models: refinement rounds, each model matched to the mean of "
           "the others", ("weight",), minimum=0, universe_only=True),
    Option("steps", int, None, "learned/soft: most optimisation steps", LEARNERS, minimum=1, by_data=True),
    Option("lr", float, 0.01, "learned/soft: learning rate", LEARNERS, minimum=0),
    Option("batch_size", int, 64, "learned/soft: examples per step", LEARNERS, minimum=1),
    Option("input_noise", float, None, "learned/soft: std of Gaussian noise on training images, a regulariser",
           LEARNERS, minimum=0, by_data=True),
    Option("patience", int, 3, "learned/soft: checks (every --check-every steps) without improvement before stopping "
           "(a value above steps/check-every runs every step)", LEARNERS, minimum=1),
    Option("check_examples", int, None, "learned/soft: examples in the fixed check the stopping rule reads (at "
           "the start, every --check-every steps and at the last step); default: sized from --steps, 2 per step "
           "between 16 and 128 (at real scale full checks cost more than a short run's steps: GPT-2-small, 128 "
           "windows × 3 points ≈ 2 minutes on 2 CPU cores)", LEARNERS, minimum=1, auto=True),
    Option("check_every", int, None, "learned/soft: steps between checks (default: steps/4, between 5 and 25)",
           LEARNERS, minimum=1, auto=True),
    Option("check_points", str, None, "learned/soft: where the check measures the loss: path (λ = 0.25, 0.5, "
           "0.75; three or more models: the centroid and every edge midpoint) or midpoint (λ = 0.5, or the "
           "centroid: a third of the cost for a pair); default: path, midpoint below 50 steps", LEARNERS,
           CHECK_POINTS, auto=True),
    Option("round", bool, True, "soft: keep the doubly-stochastic maps to the end instead of rounding them to "
           "permutations half-way (Theus et al. App. C.2's trade-off): the run reports the soft path's midpoint "
           "loss and how far its endpoint moved from B beside the rounded result, which is what it writes",
           ("soft",)),
    Option("start", str, "weight", "learned (two models): where learning begins: weight matching's transform, "
           "permutations from activations with the rest solved around them, auto (both; the one whose path is "
           "lower on the check; docs/matching.md), or identity (B as it is: Theus et al.'s start ablation); soft "
           "matching starts from weight matching's or the identity", LEARNERS, LEARNED_STARTS),
    Option("lambdas", str, "uniform_mid", "learned/soft: the distribution of λ per step", LEARNERS, LAMBDA_SAMPLERS),
    Option("alpha", float, 1.0, "learned, three or more models: Dirichlet(α·1) mixing weights per step (1: uniform "
           "over the simplex; Theus et al. use 0.1)", LEARNERS, minimum=0, universe_only=True),
    Option("residual_strategy", str, "all", "activation: which hidden states match the residual", ("activation",),
           RESIDUAL_STRATEGIES),
    Option("head_strategy", str, "two-stage",
           "activation: pair heads two-stage (Verma's Head-Perm) or keep them in order, monotonic",
           ("activation",), HEAD_STRATEGIES),
    Option("max_examples", int, 256, "activation: examples whose activations are matched", ("activation",),
           minimum=1),
)


def declared_default(name: str):
    """A built-in option's declared default: what AlignConfig's and LearnedOptions' fields start from."""
    return _BUILTIN_DEFAULTS[name]


_BUILTIN_DEFAULTS = {o.name: o.default for o in BUILTIN_OPTIONS}
