"""Where a server's CPU goes, sampled: `perf record -e cpu-clock -g` over the measured window, kept as folded stacks.

The sampling is the kernel's own timer (a software event: this machine has no hardware counters), every 1/FREQUENCY s
of CPU, kernel and user stacks both (the kernel's unwinder; a user stack is as deep as its frame pointers let perf walk,
often only its innermost frame). With the server pinned, perf samples its cores and keeps the samples of the server's
own tasks (its process and every process or thread it started), so they add up to about the CPU time its cgroup is
charged (the row's server_cpu_s), softirq work done in its tasks' context included; the idle task's and other tasks'
samples on those cores are kept apart (a softirq that runs in the generator's context, on its core, is not the
server's here either).

`perf script` turns perf's file into one line per distinct stack (`fold`), the flame-graph tools' format:

    c-epoll;[c-epoll] main;[libc.so.6] __send;entry_SYSCALL_64_[k];...;tcp_sendmsg_[k] 17

task name first, then frames from the outermost to the innermost, kernel ones marked `_[k]`, a user one prefixed
with its object file in brackets, and the samples' count. perf's own binary file is not kept (it holds the
addresses of this boot's kernel); the folded stacks, gzipped, are the raw output. run/kpaths.py names their paths.
"""
from __future__ import annotations

import gzip
import os
import re
import shutil
import signal
import subprocess
from collections import Counter
from pathlib import Path

from iobench.run import procs
from iobench.run.kpaths import IDLE, OTHER_TASKS as OTHER
from iobench.run.probes import ProbeUnavailable, start_perf
from iobench.run.runner import Probe

FREQUENCY = 2999  # samples per second of a task's CPU time: prime, so it never beats with a periodic timer
EVENT = "cpu-clock"


def check() -> None:
    """Raise ProbeUnavailable, saying why, where perf cannot sample kernel stacks here."""
    if shutil.which("perf") is None:
        raise ProbeUnavailable("perf is missing: install linux-perf (code/tools/debian-packages.txt)")
    paranoid = Path("/proc/sys/kernel/perf_event_paranoid")
    if os.geteuid() != 0 and paranoid.exists() and int(paranoid.read_text()) > -1:
        raise ProbeUnavailable(f"sampling kernel stacks needs root or kernel.perf_event_paranoid -1 "
                               f"(it is {paranoid.read_text().strip()})")


def meta(cpus: str | None = None) -> dict:
    """What a dataset's metadata says of its sampling: the event, the frequency, how perf was attached (as
    KernelProfile attaches it for a server pinned to `cpus`, or not pinned), perf's version and the kernel's."""
    version = subprocess.run(["perf", "--version"], capture_output=True, text=True).stdout.strip()
    attached = (f"perf record -a -C {cpus}: the server's cores, its tasks kept by their descent from its process, "
                "the idle task's and other tasks' samples counted apart" if cpus else
                "perf record -p: every process of the server's group when sampling started, threads included")
    return {"event": EVENT, "frequency_hz": FREQUENCY, "perf": version, "call_graph": "fp (perf record -g)",
            "attached": attached, "kernel": os.uname().release, "mapping": "iobench/run/kpaths.py"}


# `perf script -F comm,pid,tid,cpu,ip,sym,dso --show-task-events`: a header line per sample (or a task event), then one
# line per frame, innermost first
_HEADER = re.compile(r"^(?P<comm>\S.*?)\s+(?P<pid>-?\d+)/(?P<tid>-?\d+)\s+\[(?P<cpu>\d+)\]\s*(?P<rest>.*)$")
_FORK = re.compile(r"PERF_RECORD_FORK\((?P<pid>\d+):\d+\):\((?P<ppid>\d+):\d+\)")
_FRAME = re.compile(r"^\s+(?P<ip>[0-9a-f]+)\s+(?P<sym>.*?)\s+\((?P<dso>[^()]*)\)\s*$")


def frame_name(sym: str, dso: str) -> str:
    """One frame as folded: a kernel function `name_[k]`; a user one `[object] name` (object: the file's name)."""
    sym = re.sub(r"\+0x[0-9a-f]+$", "", sym).replace(";", ":") or "[unknown]"
    if dso.startswith("[kernel") or dso.endswith(".ko") or dso.startswith("[") and dso.endswith("]") and \
            dso not in ("[unknown]", "[vdso]", "[anon]", "[heap]", "[stack]"):
        return f"{sym}_[k]"
    return f"[{Path(dso).name.strip('[]') or 'unknown'}] {sym}"


def fold(script: str, root: int | None = None) -> Counter:
    """`perf script -F comm,pid,tid,cpu,ip,sym,dso --show-task-events` output -> Counter of folded stacks (task
    name first, outermost frame next). With `root`, a CPU's samples are the server's only where their process
    descends from `root` (the fork events perf records, those of tasks alive when it started included): the rest
    are counted under IDLE (the idle task, pid 0) and OTHER (every other task), each one line."""
    stacks: Counter = Counter()
    tree = {root} if root is not None else None
    head, frames = None, []

    def flush():
        if head is None:
            return
        comm, pid = head
        if tree is None or pid in tree:
            stacks[";".join([comm.replace(";", ":").replace(" ", "_"), *reversed(frames)])] += 1
        else:
            stacks[IDLE if pid == 0 else OTHER] += 1

    for line in script.splitlines():
        if not line.strip():
            flush()
            head, frames = None, []
            continue
        if m := _FRAME.match(line):
            frames.append(frame_name(m["sym"], m["dso"]))
        elif m := _HEADER.match(line):
            flush()
            head, frames = None, []
            if "PERF_RECORD_" in m["rest"]:
                if tree is not None and (f := _FORK.search(m["rest"])) and int(f["ppid"]) in tree:
                    tree.add(int(f["pid"]))
                continue
            head = (m["comm"].strip(), int(m["pid"]))
    flush()
    return stacks


def write_folded(stacks: Counter, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(out, "wt") as f:
        for stack, n in sorted(stacks.items()):
            f.write(f"{stack} {n}\n")


def read_folded(path: Path) -> Counter:
    """A folded file (gzipped or not) -> Counter of stacks."""
    opener = gzip.open if path.suffix == ".gz" else open
    stacks: Counter = Counter()
    with opener(path, "rt") as f:
        for line in f:
            stack, _, n = line.rstrip("\n").rpartition(" ")
            if stack:
                stacks[stack] += int(n)
    return stacks


class KernelProfile(Probe):
    """Sampled stacks of the server during the measured window, started with perf's events off and switched on
    through its control pipe, as SyscallProbe's perf stat; stop() folds them into `out` (gzipped) and returns them:
    {"stacks": Counter, "samples": n (the server's), "seconds", "frequency", "file": out}.

    With the server pinned (`cpus`), perf samples those CPUs (-a -C) and keeps the server's tasks by their descent
    from its process (fold's `root`), the idle task's and other tasks' samples each as one line. Per-CPU events cost
    a task switch nothing; per-task ones (-p, without pinning) are switched in and out with each of the server's
    tasks, which costs a server of many processes or threads noticeably (measured here: c-fork's CPU per request
    more than doubled)."""

    def __init__(self, pgid: int, out: Path, cpus: str | None = None, frequency: int = FREQUENCY):
        check()
        self.pgid, self.out, self.cpus, self.frequency = pgid, out, cpus, frequency
        self.data = out.with_name(out.name.replace(".folded.gz", "") + ".perf.data")

    def start(self) -> None:
        self.out.parent.mkdir(parents=True, exist_ok=True)
        pids = procs.process_group_pids(self.pgid) or [self.pgid]
        which = ["-a", "-C", self.cpus] if self.cpus else ["-p", ",".join(map(str, pids))]
        self.proc, self.ctl = start_perf(
            ["perf", "record", "-q", "-e", EVENT, "-F", str(self.frequency), "-g", *which, "-o", str(self.data)],
            "perf record did not start sampling")  # its control pipe open until stop(): perf record ends, its file
        # unfinished, when it sees the pipe closed

    def stop(self) -> dict:
        self.proc.send_signal(signal.SIGINT)
        try:
            _, err = self.proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        finally:
            os.close(self.ctl)
        if self.proc.returncode not in (0, -signal.SIGINT, 128 + signal.SIGINT):
            self.data.unlink(missing_ok=True)
            raise RuntimeError(f"perf record failed (exit {self.proc.returncode}): "
                               f"{err.decode(errors='replace')[-300:]}")
        try:
            script = subprocess.run(["perf", "script", "-i", str(self.data), "-F", "comm,pid,tid,cpu,ip,sym,dso",
                                     "--show-task-events"], capture_output=True, text=True, timeout=300)
            if script.returncode != 0:
                raise RuntimeError(f"perf script failed (exit {script.returncode}): {script.stderr[-300:]}")
            stacks = fold(script.stdout, self.pgid if self.cpus else None)
        finally:
            self.data.unlink(missing_ok=True)
            Path(str(self.data) + ".old").unlink(missing_ok=True)
        write_folded(stacks, self.out)
        samples = sum(n for stack, n in stacks.items() if stack not in (IDLE, OTHER))
        return {"samples": samples, "seconds": samples / self.frequency, "frequency": self.frequency,
                "stacks": stacks, "file": self.out}
