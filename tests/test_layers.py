"""The package's layers: every import between symalign's top-level packages and modules goes down
the list below, never up or sideways, so there is no import circle. Read from the source (every
`import symalign.X` and `from symalign.X import`, at module level or inside a function), so a
lazy import that would close a circle fails here too."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "symalign"

# Lowest first. A unit may import units of lower layers only.
LAYERS = [
    {"errors"},
    {"registry", "hub_cache", "torch_threads", "json_files"},
    {"memory", "device", "data", "zoo", "symmetry", "plots", "progress"},
    {"models", "output_folder"},  # output_folder: what a command may write over (the zoo, its inputs)
    {"landscape"},
    {"match", "symmetry_anatomy"},
    {"merge", "train", "workspace", "papers"},  # papers: the tables as data (their classes from match.config)
    {"runs"},
    {"workflows"},  # the use cases the CLI and the app share, recorded in the history below
    {"sweeps", "demo"},
    {"jobs"},  # a job may run the guided demo (symalign.jobs.kinds.demo_job)
    {"ui"},
    {"cli"},
]


def unit_of(module: str) -> str:
    """symalign.match.weight.descent -> match; symalign.zoo -> zoo."""
    return module.split(".")[1]


def imports() -> list[tuple[str, str, str]]:
    """(importing unit, imported unit, file) for every symalign import between two units."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE.parent).with_suffix("")
        if len(relative.parts) < 2 or relative.parts[1] == "__init__":
            continue  # the package's own __init__ re-exports: it is the top, not a unit
        source = relative.parts[1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names if node.module == "symalign"]
            for name in names:
                if name.startswith("symalign.") and unit_of(name) != source:
                    found.append((source, unit_of(name), str(path.relative_to(PACKAGE.parent))))
    return found


def layer(unit: str) -> int:
    for i, units in enumerate(LAYERS):
        if unit in units:
            return i
    raise AssertionError(f"symalign.{unit} is in no layer: add it to LAYERS in {Path(__file__).name}")


def test_every_unit_has_a_layer():
    units = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()
             if (p.suffix == ".py" and p.stem != "__init__") or (p.is_dir() and (p / "__init__.py").is_file())}
    for unit in units:
        layer(unit)


def test_imports_only_go_down():
    upward = sorted({f"{f}: symalign.{a} (layer {layer(a)}) imports symalign.{b} (layer {layer(b)})"
                     for a, b, f in imports() if layer(b) >= layer(a)})
    assert not upward, "imports that go up or sideways:\n" + "\n".join(upward)


def test_the_check_sees_an_import_that_closes_a_circle(tmp_path, monkeypatch):
    """The walk reads lazy imports inside functions, and a unit importing its own layer fails."""
    fake = tmp_path / "symalign"
    (fake / "zoo").mkdir(parents=True)
    (fake / "zoo" / "__init__.py").write_text("")
    (fake / "zoo" / "build.py").write_text("def build():\n    from symalign.train.loop import train\n")
    (fake / "data.py").write_text("from symalign.zoo import manifest\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)
    found = imports()
    assert ("zoo", "train", "symalign/zoo/build.py") in found
    assert any(layer(b) >= layer(a) for a, b, _ in found)


def test_docs_engine_lists_the_floors_as_they_are():
    """docs/engine.md's floor table names the units of each floor as LAYERS does (a unit moved or added
    without the doc fails here)."""
    import re

    text = (PACKAGE.parent / "docs" / "engine.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d+) \| ([^|]+) \|", text, flags=re.M)
    documented = {int(floor): set(re.findall(r"`([a-z_]+)`", units)) for floor, units in rows}
    assert documented == dict(enumerate(LAYERS))
