"""The harness's shape: layers as folders, each importing only from itself and the layers below it,
and no import circle anywhere in code/iobench (imports inside functions count: they tie modules too)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from iobench.servers.manifest import CODE

# bottom to top; a module's layer is the first part of its name under iobench
LAYERS = ("servers", "run", "load", "data", "kinds", "registry", "book", "__main__")
# one kind may build on another only where named here: rpc composes the open-loop experiment
KIND_USES = {("rpc", "openloop")}


def modules(root: Path) -> dict[str, Path]:
    """Every module of the package at `root`, by dotted name (a package by its __init__)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = (root.name,) + path.relative_to(root).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The package's own modules that module `name` imports, at the top or inside a function."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            # `from package import module` names a module; `from module import name` names the module
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        found |= {t for t in targets if t in known and t != name}
    return found


def graph(root: Path) -> dict[str, set[str]]:
    mods = modules(root)
    return {name: imports(name, path, set(mods)) for name, path in mods.items()}


def layer_of(name: str) -> tuple[int, str] | None:
    """(the index of its layer in LAYERS, its kind if it is in kinds/); None for the package itself."""
    parts = name.split(".")[1:]
    if not parts:
        return None
    if parts[0] not in LAYERS:
        raise ValueError(f"{name} is in no layer: put it in one of {', '.join(LAYERS)}")
    return LAYERS.index(parts[0]), (parts[1] if parts[0] == "kinds" and len(parts) > 1 else "")


def upward(edges: dict[str, set[str]]) -> list[str]:
    """Every import from a lower layer to a higher one, and from one kind to another not in KIND_USES."""
    wrong = []
    for src, targets in edges.items():
        here = layer_of(src)
        for dst in sorted(targets):
            there = layer_of(dst)
            if here is None or there is None:
                wrong += [f"{src} -> {dst}: the package's __init__ is imported by no one and imports nothing"]
            elif there[0] > here[0]:
                wrong += [f"{src} -> {dst}: {LAYERS[here[0]]} is below {LAYERS[there[0]]}"]
            elif there[0] == here[0] and here[1] != there[1] and "" not in (here[1], there[1]) \
                    and (here[1], there[1]) not in KIND_USES:
                wrong += [f"{src} -> {dst}: kind {here[1]} does not build on kind {there[1]}"]
    return wrong


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The import circles: strongly connected groups of more than one module (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


HARNESS = CODE / "iobench"


def test_no_import_circle_in_the_harness():
    edges = graph(HARNESS)
    assert len(edges) > 40 and sum(map(len, edges.values())) > 100   # the harness itself, read whole
    assert cycles(edges) == []


def test_no_import_runs_up_a_layer_or_across_kinds():
    assert upward(graph(HARNESS)) == []


def test_the_layers_are_the_folders_and_the_package_says_so():
    below_top = {p.name for p in HARNESS.iterdir() if p.is_dir() and p.name != "__pycache__"}
    loose = {p.stem for p in HARNESS.glob("*.py")} - {"__init__"}
    assert below_top | loose == set(LAYERS)
    assert below_top == {"servers", "run", "load", "data", "kinds", "book"}
    doc = ast.get_docstring(ast.parse((HARNESS / "__init__.py").read_text()))
    assert all(layer in doc for layer in LAYERS)


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "iobench"
    for rel, text in {"__init__.py": "", **files}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_the_checks_find_a_circle_an_upward_import_and_a_kind_that_reaches_into_another(tmp_path):
    root = _package(tmp_path, {
        "servers/__init__.py": "", "servers/manifest.py": "from iobench.run import runner\n",
        "run/__init__.py": "", "run/runner.py": "def f():\n    from ..servers import manifest\n",
        "kinds/__init__.py": "", "kinds/echo/__init__.py": "", "kinds/echo/echorun.py": "",
        "kinds/rpc/__init__.py": "", "kinds/rpc/rpcrun.py": "from iobench.kinds.openloop import openrun\n",
        "kinds/openloop/__init__.py": "", "kinds/openloop/openrun.py": "from iobench.kinds.echo.echorun import x\n",
    })
    edges = graph(root)
    assert edges["iobench.run.runner"] == {"iobench.servers.manifest"}   # the relative import, inside a function
    assert cycles(edges) == [["iobench.run.runner", "iobench.servers.manifest"]]
    assert upward(edges) == [
        "iobench.kinds.openloop.openrun -> iobench.kinds.echo.echorun: kind openloop does not build on kind echo",
        "iobench.servers.manifest -> iobench.run.runner: servers is below run"]


def test_a_module_outside_every_layer_is_named(tmp_path):
    root = _package(tmp_path, {"helpers.py": "", "book/__init__.py": "",
                               "book/plots.py": "from iobench import helpers\n"})
    with pytest.raises(ValueError, match="iobench.helpers is in no layer"):
        upward(graph(root))
