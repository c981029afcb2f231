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
import re
import statistics
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from iobench.run.procs import CLK_TCK, process_group_states
from iobench.run.procs import cpu_s as process_cpu_s

PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024


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
    pss_kib: int | None = None  # read only when asked (it walks every page table)


def process_pss_kib(pid: int) -> int:
    """Proportional set size: each page divided among the processes that share it, so a
    group's sum counts a page once (VmRSS counts it once per process: c-fork's children
    share the parent's pages and would be charged for them many times over)."""
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Pss:"):
                return int(line.split()[1])
    return 0


def group_snapshot(pgid: int, with_pss: bool = False) -> GroupSnapshot:
    cpu = 0.0
    pss = 0
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
            if with_pss:
                pss += process_pss_kib(pid)
        except (OSError, ValueError, IndexError):
            continue  # the process ended between the listing and the read
    return GroupSnapshot(time.monotonic(), cpu, rss, threads, len(live), vcsw, ivcsw, frozenset(states),
                         pss if with_pss else None)


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


def netns_counters(netns: str | None = None) -> dict[str, int]:
    """Every Tcp and TcpExt counter (what `nstat -az` shows) of a network namespace (None: this
    one), read from its own /proc/net/{snmp,netstat}: from inside it through `ip netns exec`."""
    paths = ("/proc/net/netstat", "/proc/net/snmp")
    if netns is None:
        return parse_snmp("\n".join(Path(path).read_text() for path in paths))
    argv = ["ip", "netns", "exec", netns, "cat", *paths]
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=10)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {p.returncode}: {p.stderr.strip()}")
    return parse_snmp(p.stdout)


# tcp_counters' counters as a row's columns (a dataset captured before a column existed lacks it)
TCP_COLUMNS = {"listen_overflows": "ListenOverflows", "listen_drops": "ListenDrops",
               "tcp_retrans_segs": "RetransSegs", "tcp_out_rsts": "OutRsts",
               "tcp_abort_on_close": "TCPAbortOnClose", "tcp_active_opens": "ActiveOpens"}


def tcp_counters(netns: str | None = None) -> dict[str, int]:
    """The TCP counters that explain stalls and errors, of a network namespace (None: this one;
    the whole machine on loopback), named as `nstat` shows them without its prefix:
    ListenOverflows/ListenDrops (a full accept queue dropped a connection attempt), RetransSegs
    (segments sent again), OutRsts (resets sent), TCPAbortOnClose (a socket closed with
    unread data in its receive buffer, which Linux answers with a reset) and ActiveOpens
    (connections this side opened: with one client, the connections it opened)."""
    wanted = ("TcpExtListenOverflows", "TcpExtListenDrops", "TcpExtTCPAbortOnClose", "TcpRetransSegs", "TcpOutRsts",
              "TcpActiveOpens")  # TCP_COLUMNS' counters, as /proc names them
    counters = netns_counters(netns)
    return {k.removeprefix("TcpExt").removeprefix("Tcp"): counters[k] for k in wanted if k in counters}


def _cpu_lines(names) -> list[list[int]]:
    """/proc/stat's times (user nice system idle iowait irq softirq steal, in ticks) of the lines named."""
    with open("/proc/stat") as f:
        return [list(map(int, parts[1:9])) for parts in map(str.split, f) if parts and parts[0] in names]


def system_busy_s() -> float:
    """CPU seconds all cores spent busy since boot (user+nice+system+irq+softirq+steal)."""
    user, nice, system, idle, iowait, irq, softirq, steal = _cpu_lines({"cpu"})[0]
    return (user + nice + system + irq + softirq + steal) / CLK_TCK


def core_s(cpus: str | None) -> dict[str, float]:
    """CPU seconds the CPUs of `cpus` (a taskset list; None: all) spent since boot in softirq (the kernel's
    network receive path runs there; a cgroup is charged for it only while one of its threads was on the core)
    and stolen (the hypervisor ran another guest: the core's own processes simply stood still)."""
    lines = _cpu_lines({f"cpu{c}" for c in cpu_ids(cpus)})
    return {"softirq": sum(t[6] for t in lines) / CLK_TCK, "steal": sum(t[7] for t in lines) / CLK_TCK}


SPEED_LOOP = 500_000   # iterations of core_loop_ms's loop: about 20 ms on the book's machine, a few scheduler slices


def cpu_ids(cpus: str | None) -> list[int]:
    """The CPUs a taskset list names ("1", "0-1", "1,3"); every CPU this process may use when unpinned."""
    if not cpus:
        return sorted(os.sched_getaffinity(0))
    ids = []
    for part in cpus.split(","):
        lo, _, hi = part.partition("-")
        ids.extend(range(int(lo), int(hi or lo) + 1))
    return ids


def core_loop_ms(cpus: str | None, n: int = SPEED_LOOP) -> float:
    """How fast the machine is right now: the milliseconds a fixed loop takes, run by this thread pinned
    to each CPU of `cpus` in turn, the slowest. On an idle machine it takes the same time every time;
    a CPU that is throttled, busy or shared with another guest takes longer. The book's rpc-provider
    run of 2026-11-25 met a machine whose every core ran at half speed for minutes at a time, with
    nothing in /proc/stat to show it: the harness records this beside every measured run."""
    before = os.sched_getaffinity(0)
    slowest = 0.0
    try:
        for cpu in cpu_ids(cpus):
            os.sched_setaffinity(0, {cpu})
            t0 = time.perf_counter()
            total = 0
            for i in range(n):
                total += i
            slowest = max(slowest, (time.perf_counter() - t0) * 1000.0)
    finally:
        os.sched_setaffinity(0, before)
    return slowest


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
    pss_kib_max: int = 0
    user_s: float | None = None     # the group's CPU split in user and kernel time (a cgroup only)
    sys_s: float | None = None
    softirq_s: float | None = None  # softirq and stolen time on the server's cores (None: unpinned), and
    steal_s: float | None = None    # stolen time on the generator's cores: a generator that stood still sent
    client_steal_s: float | None = None  # its calls late, and an open loop counts that lateness as latency
    started_epoch: float = 0.0      # the window's wall-clock bounds (time.time()): logs written meanwhile
    ended_epoch: float = 0.0        # (a JVM's safepoints) are matched to it by these


class GroupSampler:
    """Samples a process group from start() to stop(); stop() returns the Usage."""

    PSS_EVERY = 4  # PSS every 4th sample (1 s): smaps_rollup walks page tables, costly x 1000 processes

    def __init__(self, pgid: int, cpu_group=None, cpus: str | None = None, client_cpus: str | None = None,
                 interval_s: float = 0.25):
        self.pgid = pgid
        self.interval_s = interval_s
        self._pss_max = 0
        self.cpu_group = cpu_group  # a cgroup.CpuGroup: exact CPU time, reaped children included
        self.cpus = cpus            # the cores the group is pinned to (a taskset list): their softirq and steal
        self.client_cpus = client_cpus  # the generator's: their steal
        self._stop = threading.Event()
        self._peaks = [0, 0, 0]
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> "GroupSampler":
        self._started_epoch = time.time()
        self._cores0 = tuple(core_s(c) if c else None for c in (self.cpus, self.client_cpus))
        self._first = group_snapshot(self.pgid)
        self._split0 = (None, None)
        if self.cpu_group is not None:
            self._first.cpu_s, *self._split0 = self.cpu_group.split_s()
        self._sys0 = system_busy_s()
        self._note(self._first)
        self._thread.start()
        return self

    def _note(self, s: GroupSnapshot) -> None:
        self._peaks = [max(self._peaks[0], s.rss_kib), max(self._peaks[1], s.threads),
                       max(self._peaks[2], s.procs)]
        if s.pss_kib is not None:
            self._pss_max = max(self._pss_max, s.pss_kib)

    def _run(self) -> None:
        n = 0
        while not self._stop.wait(self.interval_s):
            n += 1
            self._note(group_snapshot(self.pgid, with_pss=(n % self.PSS_EVERY == 1)))

    def _settled(self, last: GroupSnapshot, deadline: float) -> GroupSnapshot:
        """Read the group from /proc until three readings in a row, 100 ms apart, agree (or the deadline)."""
        calm = 0
        while calm < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
            again = group_snapshot(self.pgid)
            stable = again.members == last.members and abs(again.cpu_s - last.cpu_s) < 0.005
            calm = calm + 1 if stable else 0
            last = again
        return last

    def stop(self, settle_s: float = 3.0) -> Usage:
        """End the sampling. With a cgroup, the CPU time is the kernel's own account of the group at the moment
        the load ended, which no exiting child can escape, and nothing the server does after the window counts
        (a JVM still compiling, or collecting, once the calls stopped: the 2026-11-26 rpc-tail run charged a
        5 s window with 7.5 s of CPU when this reading waited for the group to settle). Without one, the
        final reading from /proc waits until the group is settled: while a forking server reaps children, a
        child can vanish between reading the parent and reading the child, and its CPU time would be missed.
        Three equal readings in a row (same members, same CPU), 100 ms apart, mean nothing was in flight."""
        self._stop.set()
        self._thread.join()
        end = time.monotonic()
        ended_epoch = time.time()
        split = (None, None)
        if self.cpu_group is not None:
            cpu_end, *split = self.cpu_group.split_s()
        # softirq and steal since start(): server and generator cores (None where not pinned)
        cores = [{k: now[k] - then[k] for k in now} if now else {} for now, then in
                 zip((core_s(c) if c else None for c in (self.cpus, self.client_cpus)), self._cores0)]
        sys_end = system_busy_s()
        last = group_snapshot(self.pgid, with_pss=(self._pss_max == 0))  # a run shorter than 1 s
        if self.cpu_group is None:
            last = self._settled(last, end + settle_s)
        else:
            last.cpu_s = cpu_end
        self._note(last)
        user_s, sys_s = (b - a if a is not None and b is not None else None for a, b in zip(self._split0, split))
        return Usage(wall_s=end - self._first.t, cpu_s=last.cpu_s - self._first.cpu_s,
                     rss_kib_max=self._peaks[0], threads_max=self._peaks[1], procs_max=self._peaks[2],
                     vcsw=last.vcsw - self._first.vcsw, ivcsw=last.ivcsw - self._first.ivcsw,
                     system_busy_s=sys_end - self._sys0, pss_kib_max=self._pss_max, user_s=user_s, sys_s=sys_s,
                     softirq_s=cores[0].get("softirq"), steal_s=cores[0].get("steal"),
                     client_steal_s=cores[1].get("steal"),
                     started_epoch=self._started_epoch, ended_epoch=ended_epoch)


# ---- who was served: the load generator's connections, seen by the kernel -----------------------

def parse_ss(text: str, field: str = "bytes_received") -> dict[int, int]:
    """`ss -tinHe` output -> {socket inode: bytes received} (or the TCP info field named). Each socket is a line
    with `ino:N`, then an indented line of TCP info, where ss leaves bytes_received (bytes_acked) out while
    it is 0."""
    out: dict[int, int] = {}
    ino = None
    for line in text.splitlines():
        if not line[:1].isspace():
            m = re.search(r"\bino:(\d+)", line)
            ino = int(m.group(1)) if m else None
            if ino is not None:
                out[ino] = 0
        elif ino is not None:
            m = re.search(rf"\b{field}:(\d+)", line)
            if m:
                out[ino] = int(m.group(1))
    return out


@dataclass
class ConnStats:
    """What the generator's connections received, from the kernel's own count per socket.
    requests are bytes / the run's mean response size, as of the last sample (at most one
    interval before the generator stopped)."""
    conns_seen: int
    conns_served: int               # connections that received at least one response
    conn_min_requests: int | None
    conn_median_requests: float | None
    conn_max_requests: int | None
    samples: int

    @classmethod
    def from_bytes(cls, received: dict[int, int], bytes_per_response: float, samples: int) -> "ConnStats":
        if not received:
            return cls(0, 0, None, None, None, samples)
        per = sorted(int(b / bytes_per_response + 0.5) if bytes_per_response > 0 else 0
                     for b in received.values())
        return cls(conns_seen=len(per), conns_served=sum(1 for b in received.values() if b > 0),
                   conn_min_requests=per[0], conn_median_requests=statistics.median(per),
                   conn_max_requests=per[-1], samples=samples)


class ConnSampler:
    """Samples, with `ss`, every established TCP socket whose peer is the server's port (the
    load generator's connections) from start() to stop(), keeping each socket's largest
    bytes_received. wrk and ab count only what completes: a connection that never got an
    answer is invisible in their output, but not to the kernel."""

    def __init__(self, port: int, interval_s: float = 0.5, cpus: str | None = None, src: str | None = None,
                 server_side: bool = False):
        # src: only the generator's connections from this address (idle ones come from others)
        only = f"( dport = :{port} and src {src} )" if src else f"( dport = :{port} )"
        # server_side (the generator on another machine): the server's own sockets, and of each the bytes the
        # generator acknowledged (the responses it received, but for those still in flight)
        self.field = "bytes_acked" if server_side else "bytes_received"
        if server_side:
            only = f"( sport = :{port} )"
        self.argv = (["taskset", "-c", cpus] if cpus else []) + ["ss", "-tinHe", "state", "established", only]
        self.interval_s = interval_s
        self.received: dict[int, int] = {}
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> "ConnSampler":
        self._thread.start()
        return self

    def sample(self) -> None:
        out = subprocess.run(self.argv, capture_output=True, text=True, timeout=10).stdout
        for ino, b in parse_ss(out, self.field).items():
            self.received[ino] = max(b, self.received.get(ino, 0))
        self.samples += 1

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()

    def stop(self) -> dict[int, int]:
        self._stop.set()
        self._thread.join()
        return self.received
