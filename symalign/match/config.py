"""What an alignment run is asked to do: method, per-kind classes and the method's options."""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass, field

from symalign.data.defaults import learned_defaults
from symalign.errors import SymalignError
from symalign.match.matchers import all_options, declared_default, matcher, options_of
from symalign.symmetry.spec import DENSE_KINDS

# Precisions a written checkpoint may take (`auto`: the input's own; symalign.models.io maps the names).
EXPORT_DTYPES = ("auto", "float32", "bfloat16", "float16")
DEFAULT_CLASSES = {"mlp": "perm", "heads": "perm", "qk": "none", "vo": "none", "residual": "none"}
# Named class choices (the app's preset buttons, `--classes all` on the command line).
CLASS_PRESETS: dict[str, dict[str, str]] = {
    "none": {},
    "permutations": {"mlp": "perm", "heads": "perm"},
    "all": {"mlp": "perm", "heads": "perm", "qk": "orthogonal", "vo": "orthogonal", "residual": "orthogonal"},
    # permutations in place of every orthogonal map: Theus et al.'s permutation-only setting (their §B.1, Table 1's
    # "Learned matching (permutation only)", Fig. 6's permutation series) and TransFusion's classes
    "all-perm": {"mlp": "perm", "heads": "perm", "qk": "perm", "vo": "perm", "residual": "perm"},
    # every symmetry the architecture has: general invertible maps inside heads (GL(d_head) for QK and VO).
    # Learned matching gains from it (docs/matching.md, issue #29); weight matching's least-squares fit of
    # invertible maps brings weights together, not functions, so `all` keeps rotations there.
    "full": {"mlp": "perm", "heads": "perm", "qk": "invertible", "vo": "invertible", "residual": "orthogonal"},
}


# What each preset is for, in one line (the app's preset buttons show it).
PRESET_HELP: dict[str, str] = {
    "none": "no symmetry: the vanilla path",
    "permutations": "MLP units and attention heads reordered",
    "all": "permutations, rotations inside heads and of the residual stream",
    "all-perm": "permutations everywhere `all` has an orthogonal map: the residual stream and the features inside "
                "heads permuted too (Theus et al.'s and TransFusion's permutation-only setting)",
    "full": "as `all`, with general invertible maps inside heads: for learned matching "
            "(GPT-2 text pairs close more of the barrier; docs/matching.md)",
}


def preset_classes(name: str) -> dict[str, str]:
    """A preset as a class for every kind (the kinds it leaves out: none)."""
    return {kind: "none" for kind in DENSE_KINDS} | CLASS_PRESETS[name]


@dataclass
class AlignConfig:
    """The run-level settings (method, classes, data, device, seed, layers, export dtype) and the built-in
    matchers' options; each option's default is read from its declaration (symalign.match.options), never
    written here."""

    method: str = "weight"
    classes: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_CLASSES))
    head_cost: str = declared_default("head_cost")
    data: str | None = None
    device: str = "auto"
    seed: int = 0
    max_sweeps: int = declared_default("max_sweeps")
    dtype: str = "auto"  # precision of the written checkpoints: auto (the input's), float32, bfloat16, float16
    max_seconds: float | None = declared_default("max_seconds")
    steps: int | None = declared_default("steps")  # None: the data's (filled in below, so the record says it)
    patience: int = declared_default("patience")
    start: str = declared_default("start")
    lr: float = declared_default("lr")
    input_noise: float | None = declared_default("input_noise")  # None: the data's
    batch_size: int = declared_default("batch_size")
    lambdas: str = declared_default("lambdas")
    alpha: float = declared_default("alpha")
    rounds: int = declared_default("rounds")
    residual_strategy: str = declared_default("residual_strategy")
    head_strategy: str = declared_default("head_strategy")
    max_examples: int | None = declared_default("max_examples")
    # A named preset (all, permutations): the classes come from it (`classes` is ignored), and on a model that
    # refuses one of them (RoPE refuses orthogonal QK maps, post-LN orthogonal residual ones) the widest
    # admissible class stands in (SymmetrySpec.fit). Classes chosen one by one are never changed.
    preset: str | None = None
    # Which blocks the matcher may transform (symalign.match.layers: "0-2", "-1", "1:", ...); None: all.
    layers: str | None = None
    # Options a registered matcher declares beyond the fields above (symalign.match.options), by name.
    options: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        needs_data = matcher(self.method).needs_data  # an unknown method is refused here, with the choices
        if self.dtype not in EXPORT_DTYPES:
            raise SymalignError(f"unknown dtype {self.dtype!r}; choose from {', '.join(EXPORT_DTYPES)}")
        if self.layers is not None and not isinstance(self.layers, str):
            self.layers = str(self.layers)  # a sweep file's `layers = 3`
        if self.data is not None and not isinstance(self.data, str):  # a record and a reuse key keep the spec
            raise SymalignError(f"data is a spec such as 'digits' or 'text:PATH' (a run records it); got "
                                f"{type(self.data).__name__}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise SymalignError(f"seed takes an integer; got {self.seed!r}")
        if self.max_seconds is not None and self.max_seconds <= 0:
            raise SymalignError(f"--max-seconds must be positive; got {self.max_seconds}")
        self._check_options()
        if self.preset is None and not isinstance(self.classes, dict):  # classes="all": a preset's name
            raise SymalignError(f"classes maps each component kind to a class, e.g. {{'mlp': 'perm', 'heads': "
                                f"'perm'}}; got {self.classes!r}. A named preset goes in preset= "
                                f"({', '.join(CLASS_PRESETS)})")
        if self.preset is not None:
            if self.preset not in CLASS_PRESETS:
                raise SymalignError(f"unknown class preset {self.preset!r}; choose from {', '.join(CLASS_PRESETS)}")
            self.classes = preset_classes(self.preset)
        self.classes = {**DEFAULT_CLASSES, **self.classes}  # unnamed kinds: MLP and head permutations, else none
        if needs_data and self.data is None:
            raise SymalignError(f"--method {self.method} needs --data: it matches on activations or the task loss")
        if self.steps is None and self.data is not None and "steps" in options_of(self.method):
            # Written out, not left None: a run's record and its reuse key then say how many steps it ran,
            # so an earlier run made under another default (text: 300 before issue #59) is never reused.
            self.steps = learned_defaults(self.data)["steps"]

    @classmethod
    def from_options(cls, values: dict, **settings) -> AlignConfig:
        """A config from option values by name (symalign.match.options): those that are fields here
        set them, a plugin matcher's go into `options`; `settings` are the other fields (method, ...)."""
        fields = cls.__dataclass_fields__
        return cls(**settings, **{k: v for k, v in values.items() if k in fields},
                   options={k: v for k, v in values.items() if k not in fields})

    def _check_options(self) -> None:
        """Every declared option's value against its declaration (choices, type, range); `options`
        may hold only names that a registered matcher declares and that are not fields here."""
        declared, fields = all_options(), {f for f in self.__dataclass_fields__}
        for name in self.options:
            if name in fields or name not in declared:
                valid = sorted(n for n in declared if n not in fields)
                raise SymalignError(f"AlignConfig.options: {name!r} is not a plugin matcher's option"
                                    f"{' (it is a field: set it directly)' if name in fields else ''}; "
                                    f"declared: {', '.join(valid) or 'none'}")
        for name, option in declared.items():
            option.check(getattr(self, name) if name in fields else self.options.get(name))

    def option(self, name: str):
        """A declared option's value: the field, else `options`, else its declared default."""
        if name in self.__dataclass_fields__:
            return getattr(self, name)
        return self.options.get(name, all_options()[name].default)

    def for_spec(self, spec) -> AlignConfig:
        """This config on a model with this spec: a preset's refused classes replaced by the widest
        admissible ones; then every class is checked (InadmissibleError with the spec's reason)."""
        from symalign.match.layers import classes_for_layers, frozen_spaces

        config = self
        if self.preset is not None or self.layers or spec.with_experts(self.classes) != self.classes:
            config = copy.copy(self)  # not dataclasses.replace: __post_init__ would reset the preset's classes
            config.classes = spec.fit(self.classes) if self.preset is not None else dict(self.classes)
            config.classes = spec.with_experts(classes_for_layers(config.classes, self.layers, self.preset is not None))
            if self.layers:
                frozen_spaces(spec, self.layers)  # a block the model does not have is refused here, in one line
        spec.check_classes(config.classes)
        return config

    def to_json(self) -> dict:
        out = asdict(self)
        if not out["options"]:
            del out["options"]  # so a run's settings (and reuse keys) read as they did before plugin options
        return out

    def matcher_json(self) -> dict:
        """The classes and options alone (not the data, device, seed or export dtype): what a merge or a
        transport records of the alignment it ran, beside its own data and seed."""
        return {k: v for k, v in self.to_json().items() if k not in ("data", "device", "seed", "dtype")}

    def learned_options(self):
        """The learned optimiser's settings: what the user set, else the data's defaults (input noise:
        `symalign.data.learned_defaults`; the steps were filled from it in __post_init__; the checks:
        sized from the steps by LearnedOptions, symalign.match.learned.checks)."""
        from symalign.match.learned.checks import budget_checks
        from symalign.match.learned.optimisation import LearnedOptions

        steps = self.steps  # a learner needs data, so __post_init__ has filled the data's default
        noise = self.input_noise if self.input_noise is not None else learned_defaults(self.data)["input_noise"]
        return LearnedOptions(steps=steps, lr=self.lr, batch_size=self.batch_size, lambdas=self.lambdas,
                              alpha=self.alpha, seed=self.seed, soft=matcher(self.method).relaxed,
                              patience=self.patience, input_noise=noise, start=self.start, round=self.option("round"),
                              **{name: self.option(name) for name in budget_checks(steps)})  # None: sized there
