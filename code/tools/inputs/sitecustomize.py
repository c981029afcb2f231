"""What a page's code read, noted while the book builds (code/tools/page_inputs.py reads the notes).

The book's Sphinx extension puts this folder first on PYTHONPATH while it executes a page, with IOBENCH_INPUTS_LOG
naming that page's notes file: every Python process the page starts (its kernel, `code/bin/iobench` from a bash
cell, a server written in Python) then notes, when it exits, each file under the checkout (IOBENCH_INPUTS_ROOT) or
a reader's runs (IOBENCH_MINE) it opened to read, each folder it listed, each program it started, and the modules
it imported. Outside a book build (no IOBENCH_INPUTS_LOG) it does nothing. It then runs the sitecustomize it
shadows, if the interpreter has one.
"""
import os
import sys


def _note_inputs(log: str, roots: tuple[str, ...]) -> None:
    import atexit

    seen: set[str] = set()
    inside = tuple(r.rstrip("/") + "/" for r in roots)

    def keep(kind: str, path) -> None:
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not isinstance(path, str) or not path:
            return
        path = os.path.abspath(path)
        if path.startswith(inside) or path in roots:
            seen.add(f"{kind} {path}")

    def hook(event: str, args: tuple) -> None:
        try:
            if event == "open":
                path, mode, flags = args
                reads = (flags & os.O_ACCMODE) == os.O_RDONLY if mode is None else not any(c in mode for c in "wax+")
                if reads and not isinstance(path, int):
                    keep("file", path)
            elif event in ("os.listdir", "os.scandir"):
                keep("dir", args[0] if args and args[0] is not None else ".")
            elif event == "subprocess.Popen":
                executable, argv = args[0], args[1]
                argv = [argv] if isinstance(argv, (str, bytes)) else list(argv or ())
                for word in ([executable] if executable else []) + argv:
                    if not isinstance(word, (str, bytes, os.PathLike)):
                        continue
                    word = os.fsdecode(os.fspath(word))
                    # a program, a script, a class path's folders and jars (-cp a:b/*), a flag's file (--x=F)
                    for part in word.replace("=", os.pathsep).split(os.pathsep):
                        part = part[:-2] if part.endswith("/*") else part
                        if os.path.isfile(part):
                            keep("file", part)
                        elif os.path.isdir(part) and part not in (".", "/"):
                            keep("tree", part)
        except Exception:  # never break the page's own code
            pass

    def write() -> None:
        for module in list(sys.modules.values()):
            keep("file", getattr(module, "__file__", None))
        try:
            fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, "".join(f"{line}\n" for line in sorted(seen)).encode())
            finally:
                os.close(fd)
        except OSError:
            pass

    sys.addaudithook(hook)
    atexit.register(write)


def _chain() -> None:
    """Run the sitecustomize this one shadows (a distribution's own), as the interpreter would have."""
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


if os.environ.get("IOBENCH_INPUTS_LOG") and os.environ.get("IOBENCH_INPUTS_ROOT"):
    _note_inputs(os.environ["IOBENCH_INPUTS_LOG"],
                 tuple(os.path.abspath(p) for p in (os.environ["IOBENCH_INPUTS_ROOT"], os.environ.get("IOBENCH_MINE")) if p))
_chain()
