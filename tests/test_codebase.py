"""The habits that keep symalign easy to change, checked over every module of the package: no import circle
(every import, function-local ones too; modules not packages), modules sized by their concept (none a lone
helper under 40 lines, none over a generous 600), no function over about 80, and a docstring at the top of every
module that says what it is for."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "symalign"
MAX_MODULE_LINES = 600  # a generous bound: a module holds one concept, whatever its size
SMALL_MODULE_LINES = 40
# Small single-function modules kept on their own, and why: each is a floor-level unit others import without
# pulling in what a neighbour would bring (torch, plotly, the zoo).
SMALL_ON_PURPOSE = {
    "symalign.progress": "the (done, total) protocol every floor reports through; imports nothing",
    "symalign.output_folder": "the check every writing command runs first; the CLI imports it without torch",
    "symalign.data.defaults": "the data's learned defaults, read by the CLI's parser without torch",
    "symalign.cli.__main__": "`python -m symalign.cli`",
}
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
    assert len(MODULES) > 50 and "symalign.match.weight.descent" in MODULES and "symalign" in MODULES


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
    functions = [n for n in ast.parse(text).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    assert not (lines < SMALL_MODULE_LINES and len(functions) <= 1 and name not in SMALL_ON_PURPOSE
                and not path.name == "__init__.py" and any(isinstance(f, ast.FunctionDef) for f in functions)), \
        f"{path}: {lines} lines holding one helper: put it with the concept it serves"
    tree = ast.parse(text)
    doc = ast.get_docstring(tree)
    assert doc and len(doc.split()) >= 3, f"{path}: no module docstring naming its one concept"
    long = [f"{node.name} ({node.end_lineno - node.lineno + 1} lines)" for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]
    assert not long, f"{path}: functions over about 80 lines: {', '.join(long)}"


def _repo_python_files() -> list[Path]:
    root = PACKAGE.parent
    return [p for folder in ("symalign", "research", "benchmarks", "tests", "app_pages")
            for p in (root / folder).rglob("*.py")] \
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


def _imports_of_file(path: Path) -> set[str]:
    """The package's modules a file outside the package imports (the app's pages, the README's examples)."""
    return imported_modules("__outside__", path)


def reachable_modules() -> set[str]:
    """Every package module an import chain reaches from what users run: the `symalign` command (symalign.cli),
    the app (app.py and its pages) and the public API (every `from symalign... import` in the README's examples),
    function-local imports included. A package reaches its __init__, an import of `a.b.c` reaches `a.b` too."""
    root = PACKAGE.parent
    readme = (root / "README.md").read_text(encoding="utf-8")
    api = root / ".readme_api.py"
    seen: set[str] = set()
    todo = {"symalign", "symalign.cli", "symalign.cli.__main__"}
    for page in [root / "app.py", *sorted((root / "app_pages").glob("*.py"))]:
        todo |= _imports_of_file(page)
    lines = "\n".join(m.group(0) for m in re.finditer(r"^(from symalign[\w.]* import [^\n]+|import symalign[\w.]*)$",
                                                       readme, flags=re.M))
    try:
        api.write_text(lines + "\n", encoding="utf-8")
        todo |= _imports_of_file(api)
    finally:
        api.unlink(missing_ok=True)
    while todo:
        name = todo.pop()
        if name in seen or name not in MODULES:
            continue
        seen.add(name)
        parent = name.rpartition(".")[0]
        todo |= imported_modules(name, MODULES[name]) | ({parent} if parent else set()) | _named_modules(MODULES[name])
    return seen


def _named_modules(path: Path) -> set[str]:
    """Modules a module loads by name rather than by an import statement: "symalign.x:function" entries of a
    registry, `python -m symalign.x` subprocesses, and every submodule of a package its __init__ collects with
    pkgutil (the families)."""
    text = path.read_text(encoding="utf-8")
    out = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            target = node.value.partition(":")[0]
            if target in MODULES:
                out.add(target)
    if path.name == "__init__.py" and "iter_modules(__path__)" in text:
        package = module_name(path)
        out |= {m for m in MODULES if m.rpartition(".")[0] == package}
    return out


def test_every_module_is_reached_by_what_users_run():
    """`pip install .` installs no module that only tests, research or benchmarks import: each one is reached from
    the CLI, the app or the public API (the research/ folder and benchmarks/ live outside the package)."""
    unreached = sorted(set(MODULES) - reachable_modules())
    assert not unreached, "modules only tests, research or benchmarks reach (move them out of symalign/):\n" + \
        "\n".join(unreached)


def test_the_reach_check_finds_an_orphan(tmp_path, monkeypatch):
    """The check above can fail: a module nothing imports is reported."""
    orphan = tmp_path / "orphan.py"
    orphan.write_text('"""An orphan."""\n')
    monkeypatch.setitem(MODULES, "symalign.orphan", orphan)
    assert "symalign.orphan" not in reachable_modules()


_ATTRIBUTE_ASSIGNMENT = re.compile(r"^\s*(?!self\.)([A-Za-z_]\w*)\.(\w+)\s*=[^=]", flags=re.M)


def test_nothing_outside_tests_assigns_to_a_symalign_module():
    """Research, benchmarks and the app call the public API; none replaces a function or a constant of a symalign
    module or class at run time (`weight.weight_match = ...`, `AlignConfig.learned_options = ...`). Names bound
    by `import symalign.x as y` or `from symalign.x import y` are the ones checked."""
    root = PACKAGE.parent
    found = []
    files = [p for folder in ("symalign", "research", "benchmarks", "app_pages") for p in (root / folder).rglob("*.py")]
    for path in files + [root / "app.py"]:
        text = path.read_text(encoding="utf-8")
        modules = set()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Import):
                modules |= {a.asname or a.name.split(".")[0] for a in node.names if a.name.startswith("symalign")}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("symalign"):
                modules |= {a.asname or a.name for a in node.names}  # a module, a class or a function
        found += [f"{path.relative_to(root)}: {m.group(0).strip()}" for m in _ATTRIBUTE_ASSIGNMENT.finditer(text)
                  if m.group(1) in modules]
    assert not found, "\n".join(found)


def _doc_pages() -> list[Path]:
    root = PACKAGE.parent
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def test_docs_are_a_reference_not_a_journal():
    """The README is a map (under 200 lines), docs/benchmarks.md a page of current figures (under 300), and no
    section of any page is titled by an issue number, a stop or a date: the history is in git."""
    root = PACKAGE.parent
    assert len((root / "README.md").read_text(encoding="utf-8").splitlines()) < 200
    assert len((root / "docs" / "benchmarks.md").read_text(encoding="utf-8").splitlines()) < 300
    ordinal = r"\b(first|second|third|fourth|fifth|sixth|seventh|eighth) round\b"
    dated = re.compile(rf"^#+ .*(#\d+|\b20\d\d-\d\d\b|\b[Ii]ssues? \d|\b[Ss]tops? \d|{ordinal})", flags=re.M)
    found = [f"{p.relative_to(root)}: {m.group(0)}" for p in _doc_pages() for m in dated.finditer(p.read_text())]
    assert not found, "\n".join(found)


def test_nothing_cites_a_file_outside_the_repository():
    """The design the code follows is the repository's own (docs/engine.md): no page, module or script cites
    DESIGN.md or a path above the checkout."""
    root = PACKAGE.parent
    files = _doc_pages() + [p for folder in ("symalign", "research", "benchmarks", "app_pages")
                            for p in (root / folder).rglob("*.py")]
    found = [str(p.relative_to(root)) for p in files if re.search(r"DESIGN\.md|\.\./shared/", p.read_text())]
    assert not found, found


def test_relative_links_between_pages_resolve():
    """Every relative link in the README and docs/ names a file that exists and, with an anchor, a heading there."""
    root = PACKAGE.parent

    def anchors(page: Path) -> set[str]:
        heads = re.findall(r"^#+ (.+)$", page.read_text(encoding="utf-8"), flags=re.M)
        return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in heads}

    broken = []
    for page in _doc_pages():
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve()
            if not linked.exists():
                broken.append(f"{page.relative_to(root)}: {target}")
            elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
                broken.append(f"{page.relative_to(root)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)
