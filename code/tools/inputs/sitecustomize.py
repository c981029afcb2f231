"""What a page's code read, noted while the book builds (code/tools/page_inputs.py reads the notes).

The book's Sphinx extension puts this folder first on PYTHONPATH while it executes a page, with IOBENCH_INPUTS_LOG
naming that page's notes file: every Python process the page starts (its kernel, `code/bin/iobench` from a bash
cell, a server written in Python) then notes each file under the checkout (IOBENCH_INPUTS_ROOT) or a reader's runs
(IOBENCH_MINE) that it opens to read (a module's source too, where it imports one from its cached bytecode), each
folder it lists, and each program it starts with the files and folders its command line names (a JVM's class
path). A note is written the moment it is first seen, never at exit: a kernel may be stopped with SIGKILL. Outside
a book build (no IOBENCH_INPUTS_LOG) it does nothing. It then runs the sitecustomize it shadows, if there is one.
"""
import os
import sys


def _note_inputs(log: str, roots: tuple[str, ...]) -> None:
    inside = tuple(r.rstrip("/") + "/" for r in roots)
    # what the build itself writes or installs is no page's input
    skip = tuple(f"{roots[0].rstrip('/')}/{d}/" for d in ("_build", ".venv", ".cache", ".git"))
    seen: set[str] = set()
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
    os.write(fd, b"")  # the file exists from the start: a Python process of this page ran

    def keep(kind: str, path) -> None:
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not isinstance(path, str) or not path:
            return
        path = os.path.abspath(path)
        if kind == "file" and os.sep + "__pycache__" + os.sep in path and path.endswith(".pyc"):
            folder, name = os.path.split(path)  # a module imported from its bytecode: its source
            path = os.path.join(os.path.dirname(folder), name.split(".", 1)[0] + ".py")
        if not (path.startswith(inside) or path in roots) or path.startswith(skip):
            return
        note = f"{kind} {path}"
        if note not in seen:
            seen.add(note)
            try:
                os.write(fd, f"{note}\n".encode())
            except OSError:
                pass

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

    for module in list(sys.modules.values()):  # what was imported before this hook
        keep("file", getattr(module, "__file__", None))
    sys.addaudithook(hook)


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
    try:
        _note_inputs(os.environ["IOBENCH_INPUTS_LOG"],
                     tuple(os.path.abspath(p)
                           for p in (os.environ["IOBENCH_INPUTS_ROOT"], os.environ.get("IOBENCH_MINE")) if p))
    except OSError:
        pass  # no notes file: the page then counts as untraced, and is executed again next time
_chain()
