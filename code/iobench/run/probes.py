"""What the kernel counts around a measured window: its TCP counters (every kind's rows report them) and, where a
plan asks, the server's system calls by kind."""
from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
from pathlib import Path

from iobench.run import procs, sampler
from iobench.run.runner import Probe


class TcpProbe(Probe):
    """TCP counters (listen overflows, resets), before and after: this namespace's, and behind
    a link the server's namespace's too (its accept queue overflows there), summed."""

    def __init__(self, netns: str | None = None):
        self.spaces = [None] + ([netns] if netns else [])

    def _read(self) -> dict:
        total: dict[str, int] = {}
        for ns in self.spaces:
            for k, v in sampler.tcp_counters(ns).items():
                total[k] = total.get(k, 0) + v
        return total

    def start(self) -> None:
        self.before = self._read()

    def stop(self) -> dict:
        return {k: v - self.before.get(k, 0) for k, v in self._read().items()}


def tcp_columns(tcp: dict) -> dict:
    """A TcpProbe's counts as a row's columns."""
    return {column: tcp.get(counter) for column, counter in sampler.TCP_COLUMNS.items()}


# ---- system calls by kind --------------------------------------------------------------------------------

TRACING = Path("/sys/kernel/tracing")
# the kinds a page compares, each the tracepoints that count as it (a kernel may lack some: left out)
SYSCALL_KINDS = {
    "epoll_wait": ("epoll_wait", "epoll_pwait", "epoll_pwait2"),
    "epoll_ctl": ("epoll_ctl",),
    "poll_select": ("poll", "ppoll", "select", "pselect6"),
    "io_uring_enter": ("io_uring_enter",),
    "read": ("read", "readv", "recvfrom", "recvmsg", "recvmmsg"),
    "write": ("write", "writev", "sendto", "sendmsg", "sendmmsg", "sendfile64"),
    "futex": ("futex",),
    "accept": ("accept", "accept4"),
    "close": ("close", "shutdown"),
}


class ProbeUnavailable(RuntimeError):
    """A probe this machine cannot run (no perf, no tracefs): said before anything is measured."""


def syscall_tracepoints() -> dict[str, list[str]]:
    """The kernel's syscall tracepoints per kind, the ones this kernel has; mounts tracefs (as root) where it is
    not mounted. ProbeUnavailable, saying what is missing, where it cannot."""
    if shutil.which("perf") is None:
        raise ProbeUnavailable("perf is missing: install linux-perf (code/tools/debian-packages.txt)")
    events = TRACING / "events" / "syscalls"
    if not events.is_dir() and os.geteuid() == 0:
        subprocess.run(["mount", "-t", "tracefs", "nodev", str(TRACING)], capture_output=True)
    if not events.is_dir():
        raise ProbeUnavailable(f"no syscall tracepoints under {events}: mount tracefs there as root "
                               f"(mount -t tracefs nodev {TRACING})")
    return {kind: [f"syscalls:sys_enter_{n}" for n in names if (events / f"sys_enter_{n}").is_dir()]
            for kind, names in SYSCALL_KINDS.items()}


def parse_perf_stat(text: str) -> dict[str, int]:
    """`perf stat -x,` output -> {event: count}; an event perf could not count is left out."""
    out = {}
    for line in text.splitlines():
        fields = line.split(",")
        if line.startswith("#") or len(fields) < 3:
            continue
        try:
            out[fields[2]] = int(fields[0])
        except ValueError:
            continue  # "<not counted>", "<not supported>"
    return out


def start_perf(argv: list[str], failed: str) -> tuple[subprocess.Popen, int]:
    """Start a perf command (`argv`, without its control options) with its events off, switch them on through its
    control pipe and wait for its acknowledgement: measuring starts at a known moment. (perf writes its output file
    only when it stops, so the file cannot tell that it has attached.) Returns the process and the write end of the
    control pipe, for the caller to close when perf may see it closed; ProbeUnavailable, starting with `failed`,
    where perf did not acknowledge."""
    ctl_r, ctl_w = os.pipe()
    ack_r, ack_w = os.pipe()
    try:
        proc = subprocess.Popen([*argv, "--delay=-1", f"--control=fd:{ctl_r},{ack_w}"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, pass_fds=(ctl_r, ack_w))
        os.close(ctl_r)
        os.close(ack_w)
        ctl_r = ack_w = -1
        os.write(ctl_w, b"enable\n")
        ready, _, _ = select.select([ack_r], [], [], 10)
        ack = os.read(ack_r, 64) if ready else b""
        if not ack.startswith(b"ack"):
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            raise ProbeUnavailable(f"{failed} (exit {proc.returncode}): "
                                   f"{proc.stderr.read().decode(errors='replace')[-300:]}")
        ctl, ctl_w = ctl_w, -1
        return proc, ctl
    finally:
        for fd in (ctl_r, ctl_w, ack_r, ack_w):
            if fd >= 0:
                os.close(fd)


class SyscallProbe(Probe):
    """The server's system calls by kind while the load runs, counted by the kernel's tracepoints with
    `perf stat` (in-kernel counters: the process is never stopped, as `strace -c` stops it at every call;
    each call still pays the tracepoint's small cost, so a plan that counts measures CPU in runs of its own).
    Attached to every process of the server's group, threads and children started later included. perf's
    own output is kept as raw output (`out`)."""

    def __init__(self, pgid: int, out: Path):
        self.pgid, self.out = pgid, out
        self.kinds = syscall_tracepoints()

    def start(self) -> None:
        """Attach perf stat, counting from a known moment (start_perf)."""
        pids = procs.process_group_pids(self.pgid) or [self.pgid]
        events = ["raw_syscalls:sys_enter"] + [e for names in self.kinds.values() for e in names]
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.proc, ctl = start_perf(["perf", "stat", "-x,", "-o", str(self.out), "-e", ",".join(events),
                                     "-p", ",".join(map(str, pids))], "perf stat did not start counting")
        os.close(ctl)  # perf stat goes on counting after its control pipe closes

    def stop(self) -> dict[str, int]:
        """{kind: calls} and 'total': every system call of the group in the window."""
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        counts = parse_perf_stat(self.out.read_text())
        got = {kind: sum(counts.get(e, 0) for e in names) for kind, names in self.kinds.items()}
        got["total"] = counts.get("raw_syscalls:sys_enter", 0)
        return got


def syscall_columns(counts: dict | None, answered: int) -> dict:
    """A SyscallProbe's counts as a row's columns: calls per answered request, by kind, the rest as other."""
    if not counts:
        return {}
    def per(n):
        return n / answered if answered else None
    named = sum(v for k, v in counts.items() if k != "total")
    return {"syscalls_per_req": per(counts["total"]), **{f"sc_{k}_per_req": per(counts[k]) for k in SYSCALL_KINDS},
            "sc_other_per_req": per(counts["total"] - named)}


SYSCALL_COLUMNS = ["syscalls_per_req", *(f"sc_{k}_per_req" for k in SYSCALL_KINDS), "sc_other_per_req",
                   "syscalls_file"]
# a dataset's summary of them (where its plan counted): the median per point, with the total's range
SYSCALL_SUMMARY = {"syscalls_per_req": ("syscalls_per_req", "median"),
                   "syscalls_per_req_min": ("syscalls_per_req", "min"),
                   "syscalls_per_req_max": ("syscalls_per_req", "max"),
                   **{c: (c, "median") for c in SYSCALL_COLUMNS if c.startswith("sc_")}}
