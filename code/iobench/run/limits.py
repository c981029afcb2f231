"""The kernel's and the process's limits that decide how many connections a run can hold.

A stock machine gives a process 1,024 file descriptors (soft limit): a server or a load
generator at 10,000 connections needs ten times that, and one holding 100,000 idle
connections a hundred times. The harness raises its own limit before it starts anything,
so that every server and generator inherits it, and records what it had and what it set;
the other limits a model can hit (processes, threads, memory mappings) are recorded too,
so that a break point in the data can be read against them.
"""
from __future__ import annotations

import resource

from iobench.run.metadata import sysctl

# What the harness asks for: 100,000 idle connections plus the busy ones, on both ends.
NOFILE_WANTED = 262_144

# The system-wide limits a connection-per-process or per-thread model runs into.
SYSCTLS = ("fs.nr_open", "fs.file-max", "kernel.pid_max", "kernel.threads-max", "vm.max_map_count",
           "net.core.somaxconn", "net.ipv4.tcp_max_syn_backlog", "net.ipv4.ip_local_port_range")


def nofile() -> dict:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return {"soft": soft, "hard": hard}


def raise_nofile(wanted: int = NOFILE_WANTED) -> dict:
    """Raise this process's RLIMIT_NOFILE (inherited by everything it starts) to `wanted`:
    the soft limit up to the hard one, and the hard one too where the process may (root, up
    to fs.nr_open). Returns {"before", "after"}; never lowers a limit, never fails: a run
    that then needs more descriptors than it got fails in its own tool, which says so."""
    before = nofile()
    soft, hard = before["soft"], before["hard"]
    target = wanted if hard == resource.RLIM_INFINITY else max(hard, wanted)
    try:
        nr_open = int(sysctl("fs.nr_open"))
        target = min(target, nr_open)
    except ValueError:
        pass
    if soft == resource.RLIM_INFINITY or soft >= target:
        return {"before": before, "after": nofile()}
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, max(hard, target)))
    except (ValueError, OSError):  # not root: as far as the hard limit goes
        if soft < hard:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return {"before": before, "after": nofile()}


def nproc() -> dict:
    soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
    return {"soft": soft, "hard": hard}


def snapshot() -> dict:
    """The limits as they are now: this process's file and process limits, and the sysctls."""
    return {"nofile": nofile(), "nproc": nproc(), **{name: sysctl(name) for name in SYSCTLS}}
