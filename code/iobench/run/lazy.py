"""Modules imported when first used, not when a module that names them is imported.

The command line (code/bin/iobench) imports the registry, which imports every kind's dataset module, and those
import pandas and numpy: a third of a second, on every `iobench battery` or `iobench probe` the pages run, though
neither reads a table. `pandas = lazy("pandas")` gives a module object that imports the real one on its first
attribute access (the standard library's importlib.util.LazyLoader); once imported anywhere, it is the module itself.
"""
from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def lazy(name: str) -> ModuleType:
    """The module `name`: already imported, it is returned as it is; otherwise a lazily loading module, put in
    sys.modules so that every later import of it shares it. An unknown name fails here, not at first use."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module
