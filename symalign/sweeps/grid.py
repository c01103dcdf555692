"""A sweep's grid: model pairs × rows (a method with its symmetry classes and options) × matcher seeds.

Why a declarative grid: an alignment ablation is many runs that differ in one or two settings;
written as data (a TOML or YAML file, or a named preset) it can be checked whole before anything
runs, resumed cell by cell, and shared. Every cell is one recorded `align` run. A row may set any
option its method declares (symalign.match.options) and the evaluation's `data`, `points` and
`max_examples`; a `[grid]` table crosses lists of values with every row, so any option is an axis."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from itertools import combinations, product
from pathlib import Path
from typing import Any

from symalign.errors import SymalignError
from symalign.match.activation.options import RESIDUAL_STRATEGIES
from symalign.match.config import CLASS_PRESETS
from symalign.match.learned.options import LAMBDA_SAMPLERS
from symalign.match.matchers import matcher, method_names
from symalign.match.options import Option
from symalign.sweeps.sweep_file import read_sweep_file
from symalign.symmetry.spec import DENSE_KINDS

# Theus et al.'s Table 1 rows, with the ablations in between (Zhang et al.: rotations beat
# permutations alone): each row is (name, method, class preset[, options]).
PRESETS: dict[str, list[tuple]] = {
    "table1": [
        ("vanilla", "none", "none"),
        ("activation (all)", "activation", "all"),
        ("weight (permutations)", "weight", "permutations"),
        ("weight (all-perm)", "weight", "all-perm"),
        ("weight (all)", "weight", "all"),
        ("learned (all-perm)", "learned", "all-perm"),  # the paper's "Learned matching (permutation only)"
        ("learned (all)", "learned", "all"),
    ],
    # Small enough for a test or a first look: no learning.
    "quick": [
        ("vanilla", "none", "none"),
        ("weight (permutations)", "weight", "permutations"),
        ("weight (all)", "weight", "all"),
    ],
}
# The per-component ablation: from all classes, switch each component kind off in turn.
PRESETS["components"] = [("all classes", "weight", "all")] + [
    (f"all but {kind}", "weight", {k: c for k, c in CLASS_PRESETS["all"].items() if k != kind})
    for kind in CLASS_PRESETS["all"]] + [
    # Zhang et al.'s rescaling as an add-on to their rotations: the same row with and without it
    ("all classes, QK and VO rotations + rescaling", "weight",
     {**CLASS_PRESETS["all"], "qk": "orthogonal+rescale", "vo": "orthogonal+rescale"})]
# The papers' ablations of one option each (issue #41): a row per value, on any family.
PRESETS["lambda-sampling"] = [(f"learned (all), λ {v}", "learned", "all", {"lambdas": v}) for v in LAMBDA_SAMPLERS]
# Theus et al. Fig. 6 contrasts permutations with orthogonal maps: both series, stopped after n sweeps. Their
# permutation series permutes the residual stream too (all-perm): with MLP units and heads alone the blocks'
# permutations do not interact and the series is flat by construction (3.1574 at every n on vit-digits).
PRESETS["wm-iterations"] = [(f"weight ({classes}), {n} sweep{'s' * (n > 1)}", "weight", classes, {"max_sweeps": n})
                            for classes in ("all-perm", "all") for n in (1, 2, 3, 5, 10)]
PRESETS["head-strategies"] = [(f"activation (all), heads {v}", "activation", "all", {"head_strategy": v})
                              for v in ("two-stage", "monotonic")]
PRESETS["residual-strategies"] = [(f"activation (all), residual {v}", "activation", "all", {"residual_strategy": v})
                                  for v in RESIDUAL_STRATEGIES]
PRESETS["data-amount"] = [(f"activation (all), {n} examples", "activation", "all", {"activation_examples": n})
                          for n in (16, 64, 256, 1024)]
PRESETS["learned-start"] = [(f"learned (all) from {v}", "learned", "all", {"start": v}) for v in ("weight", "identity")]
# What each preset is for, in one line (the Ablations page's list, `symalign sweep --help`).
PRESET_HELP = {
    "quick": "vanilla, weight (permutations), weight (all) — no learning; on 2 cores about 10 s for vit-digits, "
             "2 minutes for gpt-shakespeare",
    "table1": "Theus et al.'s rows — vanilla, activation, weight (permutations / all-perm / all), learned (all-perm, "
              "their 'permutation only' / all)",
    "components": "weight matching with all classes, then each component kind switched off (Zhang et al. Fig. 3), "
                  "and with Zhang et al.'s rescaling added to the QK and VO rotations",
    "lambda-sampling": "learned matching with each distribution of λ per step (Theus et al. Fig. 5)",
    "wm-iterations": "weight matching with permutations everywhere (all-perm, the residual too) and with all classes "
                     "(orthogonal maps), stopped after 1, 2, 3, 5, 10 sweeps (Theus et al. Fig. 6: both series)",
    "head-strategies": "activation matching (all classes, pre-LN families too), heads two-stage or monotonic (two of "
                       "Verma & Elbayad Table 1's rows; the whole table in its setting: verma-heads)",
    "residual-strategies": "activation matching (all classes, any family), the residual from all, first or last "
                           "states, or none (Verma Table 2's strategies; the table in its setting: verma-residual)",
    "data-amount": "activation matching on 16 to 1024 examples (after Verma & Elbayad Fig. 6, which varies the "
                   "sentences behind MultiBERTs' correlations: a different setting, not comparable)",
    "learned-start": "learned matching from weight matching's transform or from the identity (Theus et al.)",
}
OPTION_KEYS = ("data", "points", "max_examples", "steps", "split")
EVALUATION_KEYS = ("data", "points", "max_examples", "split")  # a row may override the grid's evaluation
ANY_METHOD_KEYS = ("layers",)  # AlignConfig settings every method takes (symalign.match.layers)
# Zhang et al. (§5.6, Fig. 6): matching only some blocks, the others left as they are.
# A subset drops the residual map (it moves every block), so "every block" appears both ways: with it,
# and without it (`:`), the row the subsets compare with.
PRESETS["layer-subsets"] = [("weight (all), every block", "weight", "all")] + [
    (f"weight (all), blocks {text}", "weight", "all", {"layers": text}) for text in (":", "0", "-1", "1:", ":-1")]
PRESET_HELP["layer-subsets"] = ("weight matching on every block, the first, the last, all but one end (after Zhang "
                                "§5.6, which reports the evaluation loss of their merged models: a different setting, "
                                "not comparable)")
# The barrier against width (issue #44): a family's seeds 0 ↔ 1 at each of its widths (symalign.train.recipes.WIDTHS).
PRESETS["width"] = [("vanilla", "none", "none"), ("weight (all)", "weight", "all"), ("learned (all)", "learned", "all")]
PRESET_HELP["width"] = ("vanilla, weight and learned (all) on seeds 0 ↔ 1 at each width of vit-digits or "
                        "gpt-shakespeare (does alignment close more as models widen?)")


@dataclass(frozen=True)
class Row:
    """One line of the ablation table: a matcher and the symmetry classes it may use."""

    name: str
    method: str
    classes: tuple[tuple[str, str], ...]
    fits: bool = False  # a preset (named classes) is fitted to each family; a table the user wrote is not
    options: tuple[tuple[str, Any], ...] = ()  # the method's declared options, by option name
    evaluation: tuple[tuple[str, Any], ...] = ()  # data, points, max_examples over the grid's

    @property
    def class_dict(self) -> dict[str, str]:
        return dict(self.classes)

    def to_json(self) -> dict:
        return {"name": self.name, "method": self.method, "classes": self.class_dict, **dict(self.evaluation),
                **{sweep_keys(self.method).get(k, k): v for k, v in self.options}}


def sweep_keys(method: str) -> dict[str, str]:
    """Option name -> the key a sweep row writes it as (the option's name, but `activation_examples`
    for activation's `max_examples`: in a sweep, `max_examples` is the evaluation's)."""
    from symalign.match.matchers import options_of

    return {name: _key(o) for name, o in options_of(method).items() if not o.universe_only}  # cells are pairs


def _key(option: Option) -> str:
    return "activation_examples" if option.name == "max_examples" else option.name


def row_keys(method: str) -> list[str]:
    """Every key a row of this method may carry."""
    return ["name", "method", "classes", *EVALUATION_KEYS, *ANY_METHOD_KEYS, *sweep_keys(method).values()]


@dataclass(frozen=True)
class Cell:
    a: str
    b: str
    row: Row
    seed: int

    @property
    def pair(self) -> str:
        return f"{self.a} ↔ {self.b}"

    def describe(self) -> str:
        return f"cell ({self.row.name}, {self.pair}, seed {self.seed})"


@dataclass
class Grid:
    pairs: list[tuple[str, str]]
    rows: list[Row]
    seeds: list[int] = field(default_factory=lambda: [0])
    data: str | None = None
    points: int = 21
    max_examples: int | None = None
    steps: int | None = None  # learned/soft: most steps (the matcher's default when None)
    split: str = "eval"  # the split barriers are measured on (symalign.data.splits)
    name: str = "sweep"

    def cells(self) -> list[Cell]:
        """Rows outermost so that a table fills in row by row; a method without randomness runs once."""
        out = []
        for row in self.rows:
            seeds = self.seeds if matcher(row.method).stochastic else self.seeds[:1]
            out += [Cell(a, b, row, seed) for a, b in self.pairs for seed in seeds]
        return out

    def options(self) -> dict:
        return {k: getattr(self, k) for k in OPTION_KEYS}

    def check_options(self, source: str = "the sweep") -> None:
        _check_evaluation({k: getattr(self, k) for k in ("points", "max_examples", "split")}, source)
        _check_count("steps", self.steps, source)
        if not isinstance(self.seeds, list) or not self.seeds or not all(isinstance(s, int) for s in self.seeds):
            raise SymalignError(f"{source}: seeds must be a list of integers, e.g. [0, 1, 2]")

    def capped(self, max_sweeps: int) -> Grid:
        """The grid with weight matching stopped after `max_sweeps` sweeps in every row that does not set
        its own: a quick check (research/docgen/results_report.py --max-sweeps), not numbers to quote."""
        from symalign.match.matchers import options_of

        def cap(row: Row) -> Row:
            if "max_sweeps" not in options_of(row.method) or "max_sweeps" in dict(row.options):
                return row
            return replace(row, options=row.options + (("max_sweeps", max_sweeps),))
        self.rows = [cap(r) for r in self.rows]
        return self

    def to_json(self) -> dict:
        return {"name": self.name, "pairs": [list(p) for p in self.pairs], "rows": [r.to_json() for r in self.rows],
                "seeds": self.seeds, **self.options()}


def parse_classes(value, where: str) -> tuple[tuple[str, str], ...]:
    """A preset name (CLASS_PRESETS) or a {kind: class} table, as the CLI's --classes."""
    if value is None:
        value = "permutations"
    if isinstance(value, str):
        if value not in CLASS_PRESETS:
            raise SymalignError(f"{where}: unknown classes {value!r}; use a preset ({', '.join(CLASS_PRESETS)}) "
                                f"or a table such as {{mlp = \"perm\", qk = \"orthogonal\"}}")
        value = CLASS_PRESETS[value]
    if not isinstance(value, dict):
        raise SymalignError(f"{where}: classes must be a preset name or a table of kind = class")
    full = {kind: "none" for kind in DENSE_KINDS} | {str(k): str(v) for k, v in value.items()}
    return tuple(sorted(full.items()))


def preset_grid(preset: str, family: str, seeds: list[int] | None = None, models: list[int] | None = None) -> Grid:
    """A named grid over every pair of a zoo family's models (seeds 0, 1, 2 by default)."""
    if preset not in PRESETS:
        raise SymalignError(f"unknown preset {preset!r}; choose from {', '.join(PRESETS)}")
    if not family:
        raise SymalignError(f"--preset {preset} needs --family RECIPE (e.g. vit-digits)")
    pairs = width_pairs(family) if preset == "width" else list(combinations(
        [f"zoo:{family}/{i}" for i in (models or [0, 1, 2])], 2))
    rows = [_row({"name": name, "method": method, "classes": classes, **(options[0] if options else {})},
                 i, f"preset {preset}", fits=True)
            for i, (name, method, classes, *options) in enumerate(PRESETS[preset], start=1)]
    return Grid(pairs=pairs, rows=rows, seeds=seeds or [0], name=f"{preset} {family}")


def width_pairs(family: str) -> list[tuple[str, str]]:
    """Seeds 0 ↔ 1 of the family at each width; a family member the zoo lacks is named with how to build it."""
    from symalign.train.recipes import WIDTHS, width_member
    from symalign.zoo import manifest

    if family not in WIDTHS:
        raise SymalignError(f"--preset width: {family!r} has no width family; choose {' or '.join(WIDTHS)}")
    members = [width_member(family, w) for w in WIDTHS[family]]
    built = {(e["recipe"], e["seed"]) for e in manifest()["models"]}
    missing = [m for m in members if not {(m, 0), (m, 1)} <= built]
    if missing:
        raise SymalignError(f"the width family of {family} lacks {', '.join(missing)}: build it with `symalign zoo "
                            f"build --recipes {' '.join(missing)} --seeds 0 1` (minutes on 2 cores)")
    return [(f"zoo:{m}/0", f"zoo:{m}/1") for m in members]


def grid_from_dict(spec: dict, source: str) -> Grid:
    """A grid from a parsed sweep file; every mistake is named with where it is."""
    known = {"name", "models", "pairs", "family", "rows", "preset", "seeds", "grid", *OPTION_KEYS}
    unknown = sorted(set(spec) - known)
    if unknown:
        raise SymalignError(f"{source}: unknown key(s) {', '.join(unknown)}; "
                            f"a sweep file takes {', '.join(sorted(known))}")
    if "preset" in spec:
        if "rows" in spec:
            raise SymalignError(f"{source}: give either preset or rows, not both")
        grid = preset_grid(str(spec["preset"]), str(spec.get("family", "")), spec.get("seeds"))
        rows = grid.rows
    else:
        rows = [_row(r, i, source) for i, r in enumerate(spec.get("rows") or [], start=1)]
        if not rows:
            raise SymalignError(f"{source}: no rows; add [[rows]] tables (name, method, classes) or a preset")
    rows = crossed(rows, spec.get("grid"), source)
    named = "pairs" in spec or "models" in spec or "preset" not in spec
    pairs = _pairs(spec, source) if named else grid.pairs  # a preset's own pairs unless the file names models
    grid = Grid(pairs=pairs, rows=rows, seeds=spec.get("seeds", [0]), name=str(spec.get("name", Path(source).stem)))
    for key in OPTION_KEYS:
        if key in spec:
            setattr(grid, key, spec[key])
    grid.check_options(source)
    return grid


def _row(spec, index: int, source: str, fits: bool | None = None) -> Row:
    where = f"{source}, row {index}"
    if not isinstance(spec, dict):
        raise SymalignError(f"{where}: a row is a table with name, method and classes")
    method = str(spec.get("method", ""))
    where = f"{source}, row {index} ({spec.get('name', method)})"
    if method not in method_names():
        raise SymalignError(f"{where}: unknown method {method!r}; choose from {', '.join(method_names())}")
    unknown = sorted(set(spec) - set(row_keys(method)))
    if unknown:
        raise SymalignError(f"{where}: unknown key(s) {', '.join(unknown)}; a {method} row takes "
                            f"{', '.join(row_keys(method))}")
    written = spec.get("classes", "none" if method == "none" else None)
    classes = parse_classes(written, where)
    name = str(spec.get("name") or f"{method} ({spec.get('classes', 'permutations')})")
    options = _options(method, spec, where)
    evaluation = tuple((k, spec[k]) for k in EVALUATION_KEYS if k in spec)
    _check_evaluation(dict(evaluation), where)
    fitted = written is None or isinstance(written, str) if fits is None else fits
    return Row(name, method, classes, fits=fitted, options=options, evaluation=evaluation)


def _options(method: str, spec: dict, where: str) -> tuple[tuple[str, Any], ...]:
    """The row's declared options (by option name), each checked against its declaration."""
    from symalign.match.matchers import options_of

    declared, out = options_of(method), []
    for name, key in sweep_keys(method).items():
        if key in spec:
            try:
                declared[name].check(spec[key])
            except SymalignError as exc:
                raise SymalignError(f"{where}: {key}: {exc}") from None
            out.append((name, spec[key]))
    return tuple(out) + tuple((key, str(spec[key])) for key in ANY_METHOD_KEYS if key in spec)


def _check_count(key: str, value, where: str) -> None:
    """A positive integer (points: 2 or more), or None for the default."""
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)
                              or value < (2 if key == "points" else 1)):
        raise SymalignError(f"{where}: {key} must be a positive integer{' (2 or more)' * (key == 'points')}")


def _check_evaluation(values: dict, where: str) -> None:
    for key in ("points", "max_examples"):
        _check_count(key, values.get(key), where)
    if "split" in values:
        from symalign.data.splits import check_split

        try:
            check_split(values["split"])
        except SymalignError as exc:
            raise SymalignError(f"{where}: {exc}") from None
    if "data" in values and not isinstance(values["data"], str):
        raise SymalignError(f"{where}: data must be a data spec such as \"digits\" or \"text:PATH\"")


def crossed(rows: list[Row], axes, source: str) -> list[Row]:
    """Every row crossed with the `[grid]` table's lists (key = [values]): a row per combination of the
    keys the row's method takes (the evaluation's keys apply to every row), named with its values."""
    if not axes:
        return rows
    if not isinstance(axes, dict) or not all(isinstance(v, list) and v for v in axes.values()):
        raise SymalignError(f"{source}: grid must be a table of key = [values], e.g. grid = {{lambdas = [\"half\", "
                            f"\"uniform\"]}}")
    used = set()
    out = []
    for row in rows:
        keys = [k for k in axes if k in row_keys(row.method) and k not in ("name", "method")]
        used.update(keys)
        for values in product(*(axes[k] for k in keys)):
            if not keys:
                out.append(row)
                continue
            spec = {**row.to_json(), **dict(zip(keys, values))}
            spec["name"] = f"{row.name} · " + ", ".join(f"{k}={v}" for k, v in zip(keys, values))
            out.append(_row(spec, len(out) + 1, f"{source}, grid", fits=row.fits))
    unused = sorted(set(axes) - used)
    if unused:
        raise SymalignError(f"{source}: grid key(s) {', '.join(unused)} apply to no row (a row takes its method's "
                            f"options and {', '.join(EVALUATION_KEYS)})")
    return out


def _pairs(spec: dict, source: str) -> list[tuple[str, str]]:
    """`pairs` as written, else every pair of `models`, else every pair of a family's seeds 0, 1, 2."""
    if "pairs" in spec:
        pairs = spec["pairs"]
        if not isinstance(pairs, list) or not all(isinstance(p, list) and len(p) == 2 for p in pairs):
            raise SymalignError(f"{source}: pairs must be a list of [A, B] model pairs")
        return [(str(a), str(b)) for a, b in pairs]
    models = spec.get("models") or ([f"zoo:{spec['family']}/{i}" for i in range(3)] if spec.get("family") else [])
    if len(models) < 2:
        raise SymalignError(f"{source}: name the models (models = [...] with two or more, pairs = [[A, B], ...], "
                            f"or family = RECIPE)")
    return list(combinations([str(m) for m in models], 2))


def read_grid(path: str | Path) -> Grid:
    """A sweep file: TOML (.toml), YAML (.yaml, .yml) or JSON (.json)."""
    return grid_from_dict(read_sweep_file(path), str(path))
