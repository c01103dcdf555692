"""Home paints before anything heavy loads: app.py and Home import, at module level, nothing that
pulls in torch, plotly's figures or pandas (torch alone is 1.5 s; benchmarks/first_paint.py times
the page). Checked in a fresh interpreter, with the modules the two files import at top level."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "pandas", "transformers")


def top_level_imports(path: Path) -> list[str]:
    modules = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            modules += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules.append(node.module)
    return modules


def test_app_and_home_import_nothing_heavy_before_the_first_paint():
    modules = sorted(set(top_level_imports(ROOT / "app.py") + top_level_imports(ROOT / "app_pages" / "home.py")))
    assert "symalign.ui.widgets" in modules and "symalign.data" in modules  # the check reads the real files
    script = (f"import importlib, json, sys\nfor m in {modules!r}: importlib.import_module(m)\n"
              f"print(json.dumps([h for h in {HEAVY!r} if h in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, check=True, capture_output=True, text=True).stdout
    assert json.loads(out.strip().splitlines()[-1]) == []


def test_the_light_modules_still_give_the_real_defaults_and_data_classes():
    from symalign.data import ImageData, TextData, learned_defaults, load_data

    assert learned_defaults("digits") == ImageData.LEARNED_DEFAULTS
    assert learned_defaults("shakespeare") == TextData.LEARNED_DEFAULTS
    assert isinstance(load_data("digits"), ImageData)


def test_the_command_line_builds_its_parser_without_loading_torch():
    """`symalign --help` and argument errors answer at once: the parser reads torch-free registries
    (matchers, merge rules, families by name) and no command group imports torch at module level."""
    script = ("import json, sys\nfrom symalign.cli import build_parser\nbuild_parser()\n"
              f"print(json.dumps([h for h in {HEAVY!r} if h in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, check=True, capture_output=True, text=True).stdout
    assert json.loads(out.strip().splitlines()[-1]) == []
