"""Each page's inputs, by content: a rebuild executes only the pages whose inputs changed.

A page's inputs are noted when it executes (book_site.py calls `begin` before and `record` after):
  - what its code read, as noted by every Python process it started (code/tools/inputs/sitecustomize.py): the files
    under the checkout (and a reader's runs) it opened to read, the folders it listed, the programs it started with
    the files and folders their command lines name (a JVM's class path), and the modules it imported;
  - the paths its code cells name (a bash page's `code/c/build/c-fork`, a Java page's `%classpath`): a file, or a
    folder's files (those git does not ignore; all of them in a build folder git ignores);
  - for a bash or Java page, the sources of what it can run without naming it (code/c or code/java, and code/bin);
  - what Sphinx itself tracks (the page's source, its literalinclude'd files and images).
Each is kept with a digest of its content (a folder listed: its names), so that a file rewritten with the same bytes
(a dataset restored from git, a rebuilt binary) changes nothing. A page whose Python kernel left no notes, or that
has no record yet, is always executed again: what the tracking cannot see fails safe.
"""
from __future__ import annotations

import hashlib
import os
import re
import subprocess
from pathlib import Path

MISSING = "missing"
# the folders a page of a kernel may run from without naming them (its floor)
FLOOR = {"bash": ("code/c", "code/bin"), "java": ("code/java", "code/bin")}
TRACED_KERNELS = ("python3", "bash")  # kernels that are Python processes: a page of theirs must leave notes
SKIP_PARTS = {"__pycache__", ".pytest_cache", ".ipynb_checkpoints"}
PATH_WORD = re.compile(r"(?<![\w./-])(?:\.\./)*(?:code|data)/[\w./-]*")
CODE_CELL = re.compile(r"^(`{3,}|~{3,})\{code-cell\}[^\n]*\n(.*?)^\1", re.S | re.M)


class Digests:
    """Content digests of files, folders' listings and folders' files, under one root (the checkout)."""

    def __init__(self, root: Path, cache: dict | None = None):
        self.root = Path(root).resolve()
        self.cache = cache if cache is not None else {}  # absolute path -> (size, mtime_ns, sha256)
        self._listed: list[str] | None = None

    # -- keys: "file P", "dir P" (its names), "tree P" (its files' contents); P relative to root when under it
    def key(self, kind: str, path: str | Path) -> str:
        p = Path(path)
        p = p if p.is_absolute() else self.root / p
        p = Path(os.path.normpath(p))
        try:
            return f"{kind} {p.relative_to(self.root)}"
        except ValueError:
            return f"{kind} {p}"

    def path(self, key: str) -> Path:
        rel = key.split(" ", 1)[1]
        return Path(rel) if Path(rel).is_absolute() else self.root / rel

    def digest(self, key: str) -> str:
        kind, path = key.split(" ", 1)[0], self.path(key)
        if kind == "file":
            return self.file(path)
        if kind == "dir":
            names = self.listing(path)
            return MISSING if names is None else _sha("\n".join(names).encode())
        if kind == "tree":
            files = self.tree_files(path)
            if files is None:
                return MISSING
            return _sha("".join(f"{f.relative_to(path)} {self.file(f)}\n" for f in files).encode())
        raise ValueError(f"unknown input key {key!r}")

    def file(self, path: Path) -> str:
        try:
            st = path.stat()
        except OSError:
            return MISSING
        if not path.is_file():
            return MISSING
        was = self.cache.get(str(path))
        if was and was[0] == st.st_size and was[1] == st.st_mtime_ns:
            return was[2]
        h = hashlib.sha256()
        try:
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
        except OSError:
            return MISSING
        self.cache[str(path)] = (st.st_size, st.st_mtime_ns, h.hexdigest())
        return h.hexdigest()

    def git_files_under(self, folder: Path) -> list[str]:
        """The files under `folder` git tracks or would track, relative to it (none outside git or the checkout)."""
        listed = self.not_ignored()
        try:
            rel = folder.resolve().relative_to(self.root).as_posix()
        except ValueError:
            return []
        prefix = "" if rel == "." else rel + "/"
        return [f[len(prefix):] for f in listed or () if f.startswith(prefix)]

    def listing(self, folder: Path) -> list[str] | None:
        """A folder's entries as a page sees them change: those git does not ignore (a module's folder gains a
        __pycache__ whenever Python runs; that is no change of what is in it); every entry but caches in a folder
        git ignores, or outside git."""
        if not folder.is_dir():
            return None
        tracked = self.git_files_under(folder)
        if tracked:
            return sorted({f.split("/", 1)[0] for f in tracked})
        try:
            return sorted(n for n in os.listdir(folder) if n not in SKIP_PARTS)
        except OSError:
            return None

    def tree_files(self, folder: Path) -> list[Path] | None:
        """The files under `folder` that git does not ignore (all of them in a folder git ignores, or outside git)."""
        if not folder.is_dir():
            return None
        tracked = self.git_files_under(folder)
        if tracked:
            return sorted(folder / f for f in tracked)
        found = []
        for dirpath, dirnames, filenames in os.walk(folder):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_PARTS)
            found += [Path(dirpath) / f for f in sorted(filenames)]
        return found

    def not_ignored(self) -> list[str] | None:
        """Every file git tracks or would track in the checkout (listed once per Digests); None outside git."""
        if self._listed is None:
            try:
                out = subprocess.run(["git", "-C", str(self.root), "ls-files", "-z", "--cached", "--others",
                                      "--exclude-standard"], capture_output=True, timeout=60, check=True).stdout
                self._listed = [f for f in os.fsdecode(out).split("\0") if f]
            except (OSError, subprocess.SubprocessError):
                self._listed = []
        return self._listed or None


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def named_paths(source: str, page_dir: Path, root: Path) -> list[tuple[str, Path]]:
    """The files and folders under code/ or data/ that a page's code cells name: ("file" | "tree", path). A word
    cut short by a variable (`code/c/build/$id`) names the folder it stops in."""
    found = []
    for cell in CODE_CELL.finditer(source):
        for word in PATH_WORD.findall(cell.group(2)):
            bare = word.lstrip("./") if word.startswith("../") else word
            for base, text in ((page_dir, word), (root, bare)):
                p = Path(os.path.normpath(base / text))
                while not p.exists() and p.parent != p and p != root:
                    p = p.parent
                if p.exists() and p != root and (p == root / "code" or root / "code" in p.parents
                                                 or p == root / "data" or root / "data" in p.parents):
                    found.append(("file" if p.is_file() else "tree", p))
                    break
    return found


def kernel_of(source: str) -> str:
    m = re.search(r"^kernelspec:\s*\n(?:[ \t]+.*\n)*?[ \t]+name:\s*(\S+)", source, re.M)
    return m.group(1) if m else ""


def record(d: Digests, source_path: Path, notes: list[str] | None, sphinx_deps: list[Path]) -> dict:
    """A page's inputs with their digests now. notes: the lines its processes noted (None: no notes file)."""
    source = source_path.read_text(errors="replace")
    kernel = kernel_of(source)
    keys = {d.key("file", source_path)}
    keys |= {d.key("file", p) for p in sphinx_deps}
    keys |= {d.key(kind, p) for kind, p in named_paths(source, source_path.parent, d.root)}
    keys |= {d.key("tree", f) for f in FLOOR.get(kernel, ()) if (d.root / f).exists()}
    for line in notes or ():
        kind, _, path = line.strip().partition(" ")
        if kind in ("file", "dir", "tree") and path and not _generated(d, Path(path)) and Path(path) != d.root:
            keys.add(d.key(kind, path))
    untraced = kernel in TRACED_KERNELS and has_code(source) and notes is None
    return {"kernel": kernel, "untraced": untraced, "inputs": {k: d.digest(k) for k in sorted(keys)}}


def _generated(d: Digests, path: Path) -> bool:
    """What the build itself writes (its output, caches, the environment) is no page's input."""
    try:
        rel = path.resolve().relative_to(d.root)
    except ValueError:
        return False
    return bool(rel.parts) and (rel.parts[0] in ("_build", ".venv", ".cache", ".git") or SKIP_PARTS & set(rel.parts))


def has_code(source: str) -> bool:
    return CODE_CELL.search(source) is not None


def changed(d: Digests, rec: dict | None) -> list[str]:
    """Why a page must execute again: the inputs whose content changed (empty: nothing did)."""
    if rec is None:
        return ["no record of its inputs"]
    if rec.get("untraced"):
        return ["its kernel left no notes of what it read"]
    return [k for k, was in rec["inputs"].items() if d.digest(k) != was]
