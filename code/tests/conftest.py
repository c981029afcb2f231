import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "code"))


def venv_env() -> dict:
    """The environment the Makefile gives its commands: venv first on PATH, kernels in the venv."""
    env = dict(os.environ)
    venv = ROOT / ".venv"
    env["PATH"] = f"{venv / 'bin'}:{env.get('PATH', '')}"
    env["JUPYTER_DATA_DIR"] = str(venv / "share" / "jupyter")
    return env


def require_link(link_class) -> None:
    """Skip the calling test when this machine cannot make the link (not root, no `ip`, no TUN)."""
    import pytest
    from iobench.netlink import LinkUnavailable
    try:
        link_class.check_available()
    except LinkUnavailable as exc:
        pytest.skip(f"no {link_class.__name__} on this machine: {exc}")
