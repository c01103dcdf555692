"""The habits that keep symalign easy to change (issue #40), checked over every module of the
package: no import circle (every import, function-local ones too; modules not packages), no module over 400 lines,
no function over about 80, and a docstring at the top of every module that says what it is for."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "symalign"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 85  # "about 80"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imported_modules(name: str, path: Path) -> set[str]:
    """The package's modules that `name` imports, at module level or inside a function (issue #71: circles
    hid in function-local imports); TYPE_CHECKING blocks not, since they never run."""
    out: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def visit(node) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([node.module] if node.module else []))
            out.add(base)
            out.update(f"{base}.{alias.name}" for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    found = set()
    for target in out:
        while target and target not in MODULES:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)
    return found


def import_cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each a circle."""
    graph = {name: imported_modules(name, path) for name, path in MODULES.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in graph:
        if v not in index:
            connect(v)
    return cycles


def test_the_module_list_is_the_whole_package():
    assert len(MODULES) > 50 and "symalign.match.weight" in MODULES and "symalign" in MODULES


def test_no_import_circle():
    assert import_cycles() == []


def test_the_circle_check_finds_a_circle(tmp_path, monkeypatch):
    """The check above can fail: two modules importing each other are reported, a function-local import too."""
    (tmp_path / "one.py").write_text('"""One."""\ndef f():\n    from symalign.two import x\n')
    (tmp_path / "two.py").write_text('"""Two."""\nimport symalign.one\nx = 1\n')
    monkeypatch.setitem(MODULES, "symalign.one", tmp_path / "one.py")
    monkeypatch.setitem(MODULES, "symalign.two", tmp_path / "two.py")
    assert ["symalign.one", "symalign.two"] in import_cycles()


@pytest.mark.parametrize("name", list(MODULES))
def test_module_size_and_docstring(name):
    path = MODULES[name]
    text = path.read_text(encoding="utf-8")
    lines = len(text.splitlines())
    assert lines <= MAX_MODULE_LINES, f"{path}: {lines} lines (at most {MAX_MODULE_LINES}: split it by concept)"
    tree = ast.parse(text)
    doc = ast.get_docstring(tree)
    assert doc and len(doc.split()) >= 3, f"{path}: no module docstring naming its one concept"
    long = [f"{node.name} ({node.end_lineno - node.lineno + 1} lines)" for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]
    assert not long, f"{path}: functions over about 80 lines: {', '.join(long)}"


def _repo_python_files() -> list[Path]:
    root = PACKAGE.parent
    return [p for folder in ("symalign", "benchmarks", "tests", "app_pages") for p in (root / folder).rglob("*.py")] \
        + [root / "app.py"]


def test_nothing_edits_sys_path():
    """Issue #71: what scripts and tests share lives in the package (or tests/browser_support.py, which
    pytest's pythonpath finds), so no file borrows another by editing sys.path."""
    edits = [str(p) for p in _repo_python_files() if re.search(r"sys\.path\.(insert|append)", p.read_text())]
    assert not edits


def test_no_test_imports_a_script():
    """Tests import the package, never a script in benchmarks/ (a script is free to change its flags)."""
    scripts = {p.stem for p in (PACKAGE.parent / "benchmarks").glob("*.py")}
    found = []
    for path in (PACKAGE.parent / "tests").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [f"{path.name}: {n}" for n in names if n.split(".")[0] in scripts | {"benchmarks"}]
    assert not found
