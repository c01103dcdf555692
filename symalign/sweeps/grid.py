"""A sweep's grid: model pairs × rows (a method with its symmetry classes) × matcher seeds.

Why a declarative grid: an alignment ablation is many runs that differ in one or two settings;
written as data (a TOML or YAML file, or a named preset) it can be checked whole before anything
runs, resumed cell by cell, and shared. Every cell is one recorded `align` run."""

from __future__ import annotations

import json

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path

from symalign.errors import SymalignError
from symalign.match.config import CLASS_PRESETS
from symalign.match.matchers import matcher, method_names
from symalign.symmetry.spec import KINDS

# Theus et al.'s Table 1 rows, with the ablations in between (Zhang et al.: rotations beat
# permutations alone): each row is (name, method, class preset).
PRESETS: dict[str, list[tuple[str, str, str | dict[str, str]]]] = {
    "table1": [
        ("vanilla", "none", "none"),
        ("activation (all)", "activation", "all"),
        ("weight (permutations)", "weight", "permutations"),
        ("weight (all)", "weight", "all"),
        ("learned (permutations)", "learned", "permutations"),
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
    for kind in CLASS_PRESETS["all"]]
OPTION_KEYS = ("data", "points", "max_examples", "steps")


@dataclass(frozen=True)
class Row:
    """One line of the ablation table: a matcher and the symmetry classes it may use."""

    name: str
    method: str
    classes: tuple[tuple[str, str], ...]
    fits: bool = False  # a preset (named classes) is fitted to each family; a table the user wrote is not

    @property
    def class_dict(self) -> dict[str, str]:
        return dict(self.classes)


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
        for key in ("points", "max_examples", "steps"):
            value = getattr(self, key)
            if value is not None and (not isinstance(value, int) or value < (2 if key == "points" else 1)):
                raise SymalignError(f"{source}: {key} must be a positive integer{' (2 or more)' * (key == 'points')}")
        if not isinstance(self.seeds, list) or not self.seeds or not all(isinstance(s, int) for s in self.seeds):
            raise SymalignError(f"{source}: seeds must be a list of integers, e.g. [0, 1, 2]")

    def to_json(self) -> dict:
        return {"name": self.name, "pairs": [list(p) for p in self.pairs],
                "rows": [{"name": r.name, "method": r.method, "classes": r.class_dict} for r in self.rows],
                "seeds": self.seeds, **self.options()}


def parse_classes(value, where: str) -> tuple[tuple[str, str], ...]:
    """A preset name (all, full, permutations, none) or a {kind: class} table, as the CLI's --classes."""
    if value is None:
        value = "permutations"
    if isinstance(value, str):
        if value not in CLASS_PRESETS:
            raise SymalignError(f"{where}: unknown classes {value!r}; use a preset ({', '.join(CLASS_PRESETS)}) "
                                f"or a table such as {{mlp = \"perm\", qk = \"orthogonal\"}}")
        value = CLASS_PRESETS[value]
    if not isinstance(value, dict):
        raise SymalignError(f"{where}: classes must be a preset name or a table of kind = class")
    full = {kind: "none" for kind in KINDS} | {str(k): str(v) for k, v in value.items()}
    return tuple(sorted(full.items()))


def preset_grid(preset: str, family: str, seeds: list[int] | None = None, models: list[int] | None = None) -> Grid:
    """A named grid over every pair of a zoo family's models (seeds 0, 1, 2 by default)."""
    if preset not in PRESETS:
        raise SymalignError(f"unknown preset {preset!r}; choose from {', '.join(PRESETS)}")
    if not family:
        raise SymalignError(f"--preset {preset} needs --family RECIPE (e.g. vit-digits)")
    refs = [f"zoo:{family}/{i}" for i in (models or [0, 1, 2])]
    rows = [Row(name, method, parse_classes(classes, f"preset {preset}"), fits=True)
            for name, method, classes in PRESETS[preset]]
    return Grid(pairs=list(combinations(refs, 2)), rows=rows, seeds=seeds or [0], name=f"{preset} {family}")


def grid_from_dict(spec: dict, source: str) -> Grid:
    """A grid from a parsed sweep file; every mistake is named with where it is."""
    known = {"name", "models", "pairs", "family", "rows", "preset", "seeds", *OPTION_KEYS}
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
    pairs = _pairs(spec, source)
    grid = Grid(pairs=pairs, rows=rows, seeds=spec.get("seeds", [0]), name=str(spec.get("name", Path(source).stem)))
    for key in OPTION_KEYS:
        if key in spec:
            setattr(grid, key, spec[key])
    grid.check_options(source)
    return grid


def _row(spec, index: int, source: str) -> Row:
    where = f"{source}, row {index}"
    if not isinstance(spec, dict):
        raise SymalignError(f"{where}: a row is a table with name, method and classes")
    method = str(spec.get("method", ""))
    where = f"{source}, row {index} ({spec.get('name', method)})"
    if method not in method_names():
        raise SymalignError(f"{where}: unknown method {method!r}; choose from {', '.join(method_names())}")
    written = spec.get("classes", "none" if method == "none" else None)
    classes = parse_classes(written, where)
    name = str(spec.get("name") or f"{method} ({spec.get('classes', 'permutations')})")
    return Row(name, method, classes, fits=written is None or isinstance(written, str))


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
    path = Path(path)
    if not path.is_file():
        raise SymalignError(f"no sweep file {path}")
    text = path.read_text()
    if path.suffix not in (".toml", ".yaml", ".yml", ".json"):
        raise SymalignError(f"{path}: a sweep file ends in .toml, .yaml, .yml or .json")
    try:
        if path.suffix == ".toml":
            spec = tomllib.loads(text)
        elif path.suffix in (".yaml", ".yml"):
            import yaml

            spec = yaml.safe_load(text)
        else:
            spec = json.loads(text)
    except ImportError:
        raise SymalignError("reading YAML needs PyYAML (pip install pyyaml); or write the sweep file as TOML") from None
    except Exception as exc:  # each parser has its own error type; all mean "not a valid file"
        raise SymalignError(f"{path} is not a valid sweep file ({' '.join(str(exc).split())})") from None
    if not isinstance(spec, dict):
        raise SymalignError(f"{path}: a sweep file is a table of keys (models, rows, seeds, ...)")
    return grid_from_dict(spec, str(path))
