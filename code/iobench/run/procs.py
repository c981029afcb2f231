"""Processes: start one from an argument list, wait for its READY line, stop its whole group.

Every program the harness starts goes through here: servers (lifecycle.py), the delay
link's forwarder (netlink.py), tcpdump (kinds/echo). Each starts in a session of its own,
so its process group (forked children, nginx workers) is signalled together, and with
PR_SET_PDEATHSIG, so it dies too if the harness is killed. Stopping sends one signal to
the group, SIGKILL after a grace period, and waits until no member is left: that is
what "no server left behind" after Ctrl-C rests on.

    proc = spawn(["iom-delaylink", ...], stdout=subprocess.PIPE)
    line = wait_line(proc, re.compile(rb"^READY"), deadline)    # NotReady if it never comes
    ...
    left = stop_group(proc)                                      # {} when all of it is gone
"""
from __future__ import annotations

import ctypes
import errno
import os
import re
import select
import signal
import socket
import subprocess
import time
from typing import Callable

EXIT_UNSUPPORTED = 77   # the contract: "this model (or kernel feature) is not supported here"
PR_SET_PDEATHSIG = 1
CLK_TCK = os.sysconf("SC_CLK_TCK")


# ---- /proc ------------------------------------------------------------------------------

def stat_fields(pid: int) -> list[bytes]:
    """/proc/pid/stat after the command name: [0] is the state, [2] the process group,
    [11] and [12] utime and stime, [13] and [14] the reaped children's (in clock ticks)."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        data = f.read()
    return data[data.rindex(b")") + 2:].split()


def cpu_s(pid: int, with_children: bool = False) -> float:
    """utime + stime of a process, plus its reaped children's when asked."""
    f = stat_fields(pid)
    ticks = int(f[11]) + int(f[12])
    if with_children:
        ticks += int(f[13]) + int(f[14])
    return ticks / CLK_TCK


def process_group_states(pgid: int) -> dict[int, str]:
    """Every process whose process group is pgid, with its state letter. A zombie ("Z") is
    dead but not yet reaped: it holds no port, but still its CPU times."""
    states = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = stat_fields(int(entry))
        except (OSError, ValueError):
            continue
        if int(fields[2]) == pgid:
            states[int(entry)] = fields[0].decode()
    return states


def live_group_states(pgid: int) -> dict[int, str]:
    """The live processes of the group with their states (zombies are already dead)."""
    return {pid: state for pid, state in process_group_states(pgid).items() if state != "Z"}


def process_group_pids(pgid: int) -> list[int]:
    """Every live process of the group."""
    return list(live_group_states(pgid))


def exit_status(code: int | None) -> str:
    """How a process ended, as error messages say it: "exit 1", "killed by SIGKILL"."""
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit {code}"


def last_line(text: str) -> str:
    """The last line of a program's output that says something (its error, as a refusal or a crash leaves it)."""
    return next((line.strip() for line in reversed(text.splitlines()) if line.strip()), "")


# ---- ports ------------------------------------------------------------------------------

def free_port(host: str = "127.0.0.1") -> int:
    """A port that was free a moment ago (for servers that cannot take port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def port_is_listening(host: str, port: int) -> bool:
    """True while something accepts connections on host:port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.2)
        return s.connect_ex((host, port)) == 0


def port_refuses(host: str, port: int, timeout_s: float = 2.0) -> bool:
    """True when nothing listens on host:port any more (the connection is refused); a connection that is accepted,
    or only waits (a full backlog), is not a refusal."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(timeout_s)
        return s.connect_ex((host, port)) == errno.ECONNREFUSED


# ---- start ------------------------------------------------------------------------------

def _die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class Started:
    """A context manager over a start() and a stop(): a start that fails stops what it began, and leaving the block
    stops it (a server, the database beside it)."""

    def start(self) -> None: ...

    def stop(self): ...

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.stop()


def spawn(argv: list[str], *, cwd=None, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
          in_child: Callable[[], None] | None = None) -> subprocess.Popen:
    """Start argv (never through a shell) as the leader of a new session; it dies with the
    harness. in_child runs in the child before exec (e.g. joining a cgroup)."""
    def setup() -> None:
        _die_with_parent()
        if in_child is not None:
            in_child()
    return subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
                            start_new_session=True, preexec_fn=setup)


class NotReady(Exception):
    """The program never printed its READY line: why ("timeout", "exited", "closed") and
    what it printed before."""

    def __init__(self, why: str, seen: bytes):
        super().__init__(f"{why} before its READY line; stdout so far: {seen[-200:]!r}")
        self.why = why
        self.seen = seen


def wait_line(proc: subprocess.Popen, pattern: re.Pattern, deadline: float,
              keep: Callable[[bytes], None] | None = None) -> tuple[re.Match, bytes]:
    """Read proc's stdout until a line matches pattern; return the match and what was read
    after that line. Lines before it go to keep. Raises NotReady at the deadline, or when
    the program exits or closes its stdout first."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    buf = seen = b""
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise NotReady("timeout", seen + buf)
        ready, _, _ = select.select([fd], [], [], min(remaining, 0.2))
        if not ready:
            if proc.poll() is not None:
                raise NotReady("exited", seen + buf)
            continue
        chunk = os.read(fd, 4096)
        if not chunk:
            raise NotReady("closed", seen + buf)
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            m = pattern.match(line)
            if m:
                return m, buf
            seen += line + b"\n"
            if keep is not None:
                keep(line)


# ---- stop -------------------------------------------------------------------------------

def signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass
    except PermissionError as exc:  # pragma: no cover - only when pids are reused
        if exc.errno != errno.EPERM:
            raise


def stop_group(proc: subprocess.Popen, grace_s: float = 5.0, first: int = signal.SIGTERM) -> dict[int, str]:
    """Send `first` to the process group of proc (a session leader), SIGKILL what is left
    after grace_s, and wait for it another grace_s at most. Returns what is still alive
    then ({} normally: a process stuck in the kernel is named, not waited for forever).
    The leader is reaped: its exit status is then proc.returncode."""
    pgid = proc.pid  # a new session: the leader's pid is the group id
    kill_at = time.monotonic() + grace_s
    give_up_at = kill_at + grace_s
    sent = None
    while True:
        proc.poll()  # reap the leader as soon as it exits
        # Signal only while the group has live members: an empty group's id may be reused.
        alive = live_group_states(pgid)
        if not alive:
            break
        now = time.monotonic()
        if now >= give_up_at:
            return alive
        if sent is None:
            signal_group(pgid, first)
            sent = first
        elif now >= kill_at and sent != signal.SIGKILL:
            signal_group(pgid, signal.SIGKILL)  # the leader and any children it left behind
            sent = signal.SIGKILL
        time.sleep(0.02)
    try:
        proc.wait(1.0)  # the leader is dead: at most a zombie, reaped at once
    except subprocess.TimeoutExpired:  # pragma: no cover - a dead leader is always reaped
        pass
    return {}


def kill(pid: int) -> None:
    """SIGKILL one process, if it still exists."""
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
