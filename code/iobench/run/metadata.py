"""What a run records about itself: small functions, one fact each (after pyperf)."""
from __future__ import annotations

import datetime as _dt
import os
import platform
import re
from pathlib import Path
import shutil
import subprocess
import sys

from iobench.servers.manifest import CODE, ROOT

SCHEMA_VERSION = 7  # 2: TCP counters (listen overflows, retransmits) per row; 3: requested, backlog;
                    # 4: resets sent, and closes with unread data; 5: meta.json load_commands;
                    # 6: pipeline, pss_kib, conns_served and requests per connection, unserved, outlier;
                    # 7: idle_conns and the idle columns; meta.json limits (file descriptors raised)


def _run(argv: list[str]) -> str:
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unavailable ({exc.__class__.__name__})"
    return (p.stdout + p.stderr).strip()


def _first_line(text: str) -> str:
    return text.splitlines()[0] if text else ""


def wrk_version() -> str:
    return _first_line(_run(["wrk", "-v"]))


def ab_version() -> str:
    return _first_line(_run(["ab", "-V"]))


def nginx_version() -> str:
    return _first_line(_run(["nginx", "-v"]))


def cc_version() -> str:
    return _first_line(_run(["cc", "--version"]))


def jdk() -> dict:
    home = _run([str(CODE / "tools" / "find-jdk")]).splitlines()
    if not home or not os.path.isdir(home[-1]):
        return {"home": None, "version": "no JDK 21+ found"}
    return {"home": home[-1], "version": _first_line(_run([os.path.join(home[-1], "bin", "java"), "-version"]))}


def kernel() -> str:
    u = platform.uname()
    return f"{u.system} {u.release} {u.machine}"


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def virtualised(cpuinfo: str | None = None) -> bool | None:
    """Whether the kernel runs under a hypervisor (the CPU's `hypervisor` flag: a virtual machine, whose cores
    can be stolen by its host); None where /proc/cpuinfo cannot say."""
    try:
        text = cpuinfo if cpuinfo is not None else Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    flags = next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), None)
    return None if flags is None else "hypervisor" in flags


def cores() -> int:
    return os.cpu_count() or 0


def mem_total_kib() -> int:
    with open("/proc/meminfo") as f:
        return int(re.search(r"MemTotal:\s+(\d+)", f.read()).group(1))


def sysctl(name: str) -> str:
    try:
        with open("/proc/sys/" + name.replace(".", "/")) as f:
            return " ".join(f.read().split())
    except OSError:
        return "unreadable"


def git() -> dict:
    if not shutil.which("git") or not (ROOT / ".git").exists():
        return {"commit": None, "dirty": None}
    commit = _run(["git", "-C", str(ROOT), "rev-parse", "HEAD"])
    # New files that git does not ignore count too: they may be code the run used.
    status = _run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=normal"])
    return {"commit": commit if re.fullmatch(r"[0-9a-f]{40}", commit) else None, "dirty": bool(status)}


def portable_text(text: str) -> str:
    """Text without this checkout's location (data/ is shared between machines)."""
    return text.replace(str(ROOT) + "/", "")


def portable(argv: list[str]) -> list[str]:
    """A command line without this checkout's location."""
    return [portable_text(a) for a in argv]


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def collect(**extra) -> dict:
    """Everything about the machine and the tools, plus the caller's own fields."""
    meta = {
        "schema_version": SCHEMA_VERSION,
        "harness_argv": portable([sys.executable] + sys.argv),
        "machine": {"kernel": kernel(), "cpu_model": cpu_model(), "cores": cores(), "virtualised": virtualised(),
                    "mem_total_kib": mem_total_kib(), "hostname": platform.node(),
                    "somaxconn": sysctl("net.core.somaxconn"),
                    "ip_local_port_range": sysctl("net.ipv4.ip_local_port_range"),
                    "tcp_tw_reuse": sysctl("net.ipv4.tcp_tw_reuse")},
        "versions": {"python": platform.python_version(), "wrk": wrk_version(), "ab": ab_version(),
                     "nginx": nginx_version(), "cc": cc_version(), "jdk": jdk()},
        "git": git(),
    }
    meta.update(extra)
    return meta
