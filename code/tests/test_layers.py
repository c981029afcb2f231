"""The harness's shape: layers as folders, each importing only from itself and the layers below it,
and no import circle anywhere in code/iobench (imports inside functions count: they tie modules too)."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import sys

from iobench import registry
from iobench.servers.manifest import CODE

# bottom to top; a module's layer is the first part of its name under iobench
LAYERS = ("servers", "run", "load", "data", "kinds", "registry", "book", "__main__")
# one kind may build on another only where named here: rpc composes the open-loop experiment
KIND_USES = {("rpc", "openloop"), ("db", "http"), ("db", "openloop")}  # the RPC providers under open loop; HTTP
# load on a database, and the open loop's fractions of capacity on it


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


# Every kind is one package of the same modules, and what each must define (registry.KINDS reads them).
KIND_FILES = {"__init__.py": (), "plans.py": ("PLANS",), "experiment.py": (), "dataset.py": ("COLUMNS", "KEYS", "load")}
COLUMN_LIST = re.compile(r"^[A-Z_]*(COLUMNS|KEYS)$")  # a module-level list of columns: COLUMNS, POINT_KEYS, ...


def column_lists(path: Path) -> dict[str, set[str]]:
    """The module's top-level lists of columns (names matching COLUMN_LIST): the strings written in each."""
    found = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name) and COLUMN_LIST.match(t.id) and node.value is not None:
                    found[t.id] = {n.value for n in ast.walk(node.value)
                                   if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    return found


def top_level_names(path: Path) -> set[str]:
    """What a module defines at its top: names assigned, functions and classes."""
    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def kind_shapes(root: Path) -> list[str]:
    """Every kind package that is not of the same files, each defining what it must."""
    wrong = []
    for kind in sorted(p for p in (root / "kinds").iterdir() if p.is_dir() and p.name != "__pycache__"):
        files = {p.name for p in kind.glob("*.py")}
        if files != set(KIND_FILES):
            wrong.append(f"kinds/{kind.name} has {', '.join(sorted(files))}; "
                         f"a kind has {', '.join(sorted(KIND_FILES))}")
            continue
        for name, needs in KIND_FILES.items():
            defined = top_level_names(kind / name)
            wrong += [f"kinds/{kind.name}/{name} does not define {n}" for n in needs if n not in defined]
    return wrong


# Where a list of columns declares them: the harness below the book (the book's pages pick columns to show).
DECLARING = ("servers", "run", "load", "data", "kinds", "registry")


def stray_columns(root: Path) -> list[str]:
    """A kind's own columns (written in its dataset.py's column lists and in no other kind's) declared in a list
    of columns of the harness outside that kind's package."""
    by_kind: dict[str, set[str]] = {}
    for path in sorted((root / "kinds").glob("*/dataset.py")):
        by_kind[path.parent.name] = set().union(*column_lists(path).values())
    own = {kind: cols - set().union(*(c for k, c in by_kind.items() if k != kind)) for kind, cols in by_kind.items()}
    wrong = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if rel.with_suffix("").parts[0] not in DECLARING:
            continue
        here = rel.parts[1] if rel.parts[0] == "kinds" and len(rel.parts) > 2 else None
        for name, cols in column_lists(path).items():
            for kind, mine in own.items():
                if kind != here and (stray := sorted(cols & mine)):
                    wrong.append(f"{rel.as_posix()} {name} declares {', '.join(stray)}: "
                                 f"column{'s' if len(stray) > 1 else ''} of kind {kind}, declared in kinds/{kind}")
    return wrong


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
        "kinds/__init__.py": "", "kinds/echo/__init__.py": "", "kinds/echo/experiment.py": "",
        "kinds/rpc/__init__.py": "", "kinds/rpc/experiment.py": "from iobench.kinds.openloop import experiment\n",
        "kinds/openloop/__init__.py": "",
        "kinds/openloop/experiment.py": "from iobench.kinds.echo.experiment import x\n",
    })
    edges = graph(root)
    assert edges["iobench.run.runner"] == {"iobench.servers.manifest"}   # the relative import, inside a function
    assert cycles(edges) == [["iobench.run.runner", "iobench.servers.manifest"]]
    assert upward(edges) == [
        "iobench.kinds.openloop.experiment -> iobench.kinds.echo.experiment: kind openloop does not build on kind echo",
        "iobench.servers.manifest -> iobench.run.runner: servers is below run"]


def test_a_module_outside_every_layer_is_named(tmp_path):
    root = _package(tmp_path, {"helpers.py": "", "book/__init__.py": "",
                               "book/plots.py": "from iobench import helpers\n"})
    with pytest.raises(ValueError, match="iobench.helpers is in no layer"):
        upward(graph(root))


def test_every_kind_is_one_package_of_the_same_files():
    assert kind_shapes(HARNESS) == []
    assert {k.name for k in registry.KINDS} == {p.parent.name for p in (HARNESS / "kinds").glob("*/plans.py")}
    for kind in registry.KINDS:  # the registry maps a name to the kind's own parts, no wrapper between
        assert kind.plans is sys.modules[f"iobench.kinds.{kind.name}.plans"].PLANS
        assert kind.reader is sys.modules[f"iobench.kinds.{kind.name}.dataset"].load
        assert isinstance(kind.experiment, type)
        assert kind.experiment.__module__ == f"iobench.kinds.{kind.name}.experiment"


def test_a_kinds_columns_are_declared_in_its_package_alone():
    assert stray_columns(HARNESS) == []


def test_the_shape_checks_find_a_kind_of_other_files_and_a_column_declared_elsewhere(tmp_path):
    root = _package(tmp_path, {
        "kinds/__init__.py": "",
        **{f"kinds/http/{f}": "" for f in KIND_FILES},
        "kinds/http/plans.py": "PLANS = {}\n",
        "kinds/http/dataset.py": 'COLUMNS = ["server", "rps"]\nKEYS = ["server"]\ndef load(): ...\n',
        "kinds/echo/__init__.py": "", "kinds/echo/echorun.py": "", "kinds/echo/plans.py": "PLANS = {}\n",
        "kinds/echo/dataset.py": 'COLUMNS = ["server", "tps"]\nKEYS = ["server"]\n',
        # as run/results.py and data/dataset.py declared the HTTP kind's columns and keys before every kind
        # held its own
        "run/results.py": 'COLUMNS = ["server", "rps", "model"]\nPOINT_KEYS = ("server",)\n',
        "data/dataset.py": 'KEYS = ["server", "tps"]\n',
        "book/page.py": 'SHOWN_COLUMNS = ("tps",)\n',  # a page picks the columns it shows: not a declaration
    })
    assert kind_shapes(root) == ["kinds/echo has __init__.py, dataset.py, echorun.py, plans.py; "
                                 "a kind has __init__.py, dataset.py, experiment.py, plans.py"]
    assert stray_columns(root) == [
        "data/dataset.py KEYS declares tps: column of kind echo, declared in kinds/echo",
        "run/results.py COLUMNS declares rps: column of kind http, declared in kinds/http"]
    (root / "kinds/echo/echorun.py").rename(root / "kinds/echo/experiment.py")
    assert kind_shapes(root) == ["kinds/echo/dataset.py does not define load"]
