"""Exact CPU time of a server and every process it ever forked: a CPU-accounting cgroup.

Reading /proc misses the CPU time of a child that exits and is reaped between two
readings (a forking server at 1000 connections reaps hundreds per second). The kernel's
cpuacct controller (cgroup v1) or cpu.stat (cgroup v2) charges every task's CPU time to
its group as it runs, so the total survives the task. The server joins its group before
it execs, so nothing it does escapes the count.

Needs write access to the cgroup file system (root); without it, ``CpuGroup.create``
returns None and the sampler falls back to /proc, saying so in the metadata.
"""
from __future__ import annotations

import os
import secrets
import time
from pathlib import Path

V2_ROOT = Path("/sys/fs/cgroup")
V1_ROOTS = (Path("/sys/fs/cgroup/cpuacct"), Path("/sys/fs/cgroup/cpu,cpuacct"))


class CpuGroup:
    """One cgroup for one server process tree; ``usage_s()`` is its total CPU time."""

    def __init__(self, path: Path, version: int):
        self.path = path
        self.version = version

    @property
    def source(self) -> str:
        return "cgroup v2 cpu.stat" if self.version == 2 else "cgroup v1 cpuacct.usage"

    @classmethod
    def create(cls, label: str = "server") -> "CpuGroup | None":
        name = f"iobench-{label}-{os.getpid()}-{secrets.token_hex(3)}"
        for root, version in [(V2_ROOT, 2)] + [(r, 1) for r in V1_ROOTS]:
            marker = root / ("cgroup.controllers" if version == 2 else "cpuacct.usage")
            if not marker.exists():
                continue
            sweep(root)
            try:
                path = root / name
                path.mkdir()
            except OSError:
                continue
            group = cls(path, version)
            try:
                group.usage_s()
            except OSError:
                group.remove()
                continue
            return group
        return None

    @property
    def procs_file(self) -> str:
        return str(self.path / "cgroup.procs")

    def join(self) -> None:
        """Move the calling process into the group (called in the child before exec)."""
        fd = os.open(self.procs_file, os.O_WRONLY)
        try:
            os.write(fd, str(os.getpid()).encode())
        finally:
            os.close(fd)

    def usage_s(self) -> float:
        if self.version == 2:
            return self.split_s()[0]
        return int((self.path / "cpuacct.usage").read_text()) / 1e9

    def split_s(self) -> tuple[float, float | None, float | None]:
        """Total, user and system CPU seconds of the group. cgroup v2's cpu.stat splits the exact total; v1's
        cpuacct.stat samples it at each clock tick (1/USER_HZ s), and its system time includes the interrupt and
        softirq ticks that fell while one of the group's threads was on the core. Softirq work done while no
        thread of the group ran is charged to no group: sampler.GroupSampler counts it per core."""
        if self.version == 1:
            ticks = dict(line.split() for line in (self.path / "cpuacct.stat").read_text().splitlines())
            hz = os.sysconf("SC_CLK_TCK")
            return self.usage_s(), int(ticks["user"]) / hz, int(ticks["system"]) / hz
        stat = {}
        for line in (self.path / "cpu.stat").read_text().splitlines():
            key, _, value = line.partition(" ")
            stat[key] = value
        if "usage_usec" not in stat:
            raise OSError(f"no usage_usec in {self.path / 'cpu.stat'}")
        user, system = stat.get("user_usec"), stat.get("system_usec")
        return (int(stat["usage_usec"]) / 1e6, int(user) / 1e6 if user else None,
                int(system) / 1e6 if system else None)

    def pids(self) -> list[int]:
        try:
            return [int(p) for p in Path(self.procs_file).read_text().split()]
        except OSError:
            return []

    def remove(self, wait_s: float = 5.0) -> None:
        """Remove the group once its processes are gone (the kernel refuses while any remain)."""
        deadline = time.monotonic() + wait_s
        while True:
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                if time.monotonic() >= deadline:
                    return  # left for the operator; named iobench-* so it is easy to find
                time.sleep(0.05)


def sweep(root: Path) -> list[Path]:
    """Remove the empty groups that harnesses no longer running left under root, and return them.
    A harness killed with SIGKILL cannot remove its group; its server dies with it (PR_SET_PDEATHSIG)
    and leaves the group empty. The name says who made it: iobench-<label>-<pid>-<hex>."""
    removed = []
    for path in root.glob("iobench-*-*-*"):
        pid = path.name.rsplit("-", 2)[-2]
        if not pid.isdigit() or Path(f"/proc/{pid}").exists():
            continue
        try:
            path.rmdir()  # the kernel refuses while a process is in it
        except OSError:
            continue
        removed.append(path)
    return removed
