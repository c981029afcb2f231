"""Resource sampling from /proc while a server is under load.

CPU time is read for the server's whole process group (every live process, plus the
children the leader has reaped, which the kernel adds to its cutime/cstime), so a
forking server and nginx's master+worker are charged in full. RSS, threads and
context switches are summed over the group's processes (switches over their threads);
a background thread samples them to record peaks.

On loopback, the kernel's TCP work runs in the context of the task that sends, so a
server's CPU time includes part of the network stack: that is the cost per request a
reader should compare, not the user-space time alone.
"""
from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass

from .lifecycle import process_group_states

CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024


def _stat_fields(pid: int) -> list[bytes]:
    with open(f"/proc/{pid}/stat", "rb") as f:
        data = f.read()
    return data[data.rindex(b")") + 2:].split()


def process_cpu_s(pid: int, with_children: bool = False) -> float:
    """utime + stime of a process (fields 14/15), plus reaped children's (16/17)."""
    f = _stat_fields(pid)
    ticks = int(f[11]) + int(f[12])
    if with_children:
        ticks += int(f[13]) + int(f[14])
    return ticks / CLK_TCK


def _ctx_switches(pid: int) -> tuple[int, int]:
    vol = invol = 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0, 0
    for tid in tids:
        try:
            st = _read_status(f"/proc/{pid}/task/{tid}/status")
        except OSError:
            continue
        vol += int(st.get("voluntary_ctxt_switches", 0))
        invol += int(st.get("nonvoluntary_ctxt_switches", 0))
    return vol, invol


def _read_status(path: str) -> dict[str, str]:
    out = {}
    with open(path) as f:
        for line in f:
            k, _, v = line.partition(":")
            out[k] = v.strip()
    return out


@dataclass
class GroupSnapshot:
    t: float
    cpu_s: float
    rss_kib: int
    threads: int
    procs: int
    vcsw: int
    ivcsw: int
    members: frozenset[int]  # live and zombie pids


def group_snapshot(pgid: int) -> GroupSnapshot:
    cpu = 0.0
    rss = threads = vcsw = ivcsw = 0
    states = process_group_states(pgid)
    live = [pid for pid, state in states.items() if state != "Z"]
    # A child that exited but is not reaped yet is a zombie: its CPU time is in neither its
    # parent's cutime nor a live process, so it is read from the zombie itself.
    for pid in states:
        try:
            cpu += process_cpu_s(pid, with_children=(pid == pgid))
        except (OSError, ValueError, IndexError):
            pass
    for pid in live:
        try:
            st = _read_status(f"/proc/{pid}/status")
            rss += int(st.get("VmRSS", "0 kB").split()[0])
            threads += int(st.get("Threads", "0"))
            v, i = _ctx_switches(pid)
            vcsw += v
            ivcsw += i
        except (OSError, ValueError, IndexError):
            continue  # the process ended between the listing and the read
    return GroupSnapshot(time.monotonic(), cpu, rss, threads, len(live), vcsw, ivcsw, frozenset(states))


def parse_snmp(text: str) -> dict[str, int]:
    """/proc/net/netstat and /proc/net/snmp: pairs of lines, names then values; the Tcp and
    TcpExt counters, named as `nstat` names them (TcpExtDelayedACKs, TcpRetransSegs)."""
    out: dict[str, int] = {}
    lines = [ln for ln in text.splitlines() if ln.strip()]
    for names, values in zip(lines[::2], lines[1::2]):
        prefix, *keys = names.split()
        vprefix, *vals = values.split()
        if prefix != vprefix or prefix.rstrip(":") not in ("Tcp", "TcpExt"):
            continue
        for k, v in zip(keys, vals):
            out[f"{prefix.rstrip(':')}{k}"] = int(v)
    return out


def tcp_counters() -> dict[str, int]:
    """Machine-wide TCP counters (as `nstat` shows them) that explain stalls and errors:
    ListenOverflows/ListenDrops (a full accept queue dropped a connection attempt),
    RetransSegs (segments sent again), OutRsts (resets sent) and TCPAbortOnClose (a socket
    closed with unread data in its receive buffer, which Linux answers with a reset)."""
    wanted = ("TcpExtListenOverflows", "TcpExtListenDrops", "TcpExtTCPAbortOnClose", "TcpRetransSegs", "TcpOutRsts")
    text = ""
    for path in ("/proc/net/netstat", "/proc/net/snmp"):
        try:
            with open(path) as f:
                text += f.read() + "\n"
        except OSError:
            continue
    counters = parse_snmp(text)
    return {k.removeprefix("TcpExt").removeprefix("Tcp"): counters[k] for k in wanted if k in counters}


def system_busy_s() -> float:
    """CPU seconds all cores spent busy since boot (user+nice+system+irq+softirq+steal)."""
    with open("/proc/stat") as f:
        parts = f.readline().split()
    user, nice, system, idle, iowait, irq, softirq, steal = map(int, parts[1:9])
    return (user + nice + system + irq + softirq + steal) / CLK_TCK


def machine_busy_cores(window_s: float = 0.5) -> float:
    """How many cores were busy, on average, over a short window."""
    a, t0 = system_busy_s(), time.monotonic()
    time.sleep(window_s)
    return (system_busy_s() - a) / (time.monotonic() - t0)


@dataclass
class Usage:
    wall_s: float
    cpu_s: float
    rss_kib_max: int
    threads_max: int
    procs_max: int
    vcsw: int
    ivcsw: int
    system_busy_s: float


class GroupSampler:
    """Samples a process group from start() to stop(); stop() returns the Usage."""

    def __init__(self, pgid: int, interval_s: float = 0.25, cpu_group=None):
        self.pgid = pgid
        self.interval_s = interval_s
        self.cpu_group = cpu_group  # a cgroup.CpuGroup: exact CPU time, reaped children included
        self._stop = threading.Event()
        self._peaks = [0, 0, 0]
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> "GroupSampler":
        self._first = group_snapshot(self.pgid)
        if self.cpu_group is not None:
            self._first.cpu_s = self.cpu_group.usage_s()
        self._sys0 = system_busy_s()
        self._note(self._first)
        self._thread.start()
        return self

    def _note(self, s: GroupSnapshot) -> None:
        self._peaks = [max(self._peaks[0], s.rss_kib), max(self._peaks[1], s.threads),
                       max(self._peaks[2], s.procs)]

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._note(group_snapshot(self.pgid))

    def stop(self, settle_s: float = 3.0) -> Usage:
        """End the sampling. The final CPU reading waits until the group is settled: while a
        forking server reaps children, a child can vanish between reading the parent and
        reading the child, and its CPU time would be missed. Three equal readings in a row
        (same members, same CPU), 100 ms apart, mean nothing was in flight. With a cgroup
        the CPU time comes from the kernel's own account of the group instead, which no
        exiting child can escape; /proc then gives only memory, threads and switches."""
        self._stop.set()
        self._thread.join()
        end = time.monotonic()
        sys_end = system_busy_s()
        last = group_snapshot(self.pgid)
        deadline = end + settle_s
        calm = 0
        while calm < 3 and time.monotonic() < deadline:  # three equal readings, 100 ms apart
            time.sleep(0.1)
            again = group_snapshot(self.pgid)
            stable = again.members == last.members and abs(again.cpu_s - last.cpu_s) < 0.005
            calm = calm + 1 if stable else 0
            last = again
        self._note(last)
        if self.cpu_group is not None:
            last.cpu_s = self.cpu_group.usage_s()
        return Usage(wall_s=end - self._first.t, cpu_s=last.cpu_s - self._first.cpu_s,
                     rss_kib_max=self._peaks[0], threads_max=self._peaks[1], procs_max=self._peaks[2],
                     vcsw=last.vcsw - self._first.vcsw, ivcsw=last.ivcsw - self._first.ivcsw,
                     system_busy_s=sys_end - self._sys0)
