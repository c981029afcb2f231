"""Start a server, wait until it is ready, verify its answer, and always stop it.

    with ServerProcess(get("nginx"), ServerOptions(), cpus="0") as srv:
        srv.verify()
        ... drive load at srv.port ...
    # here the process group is gone and the port is free

With netns="name" the server runs inside that network namespace (`ip netns exec` execs
it, so the pid is still the server's); the harness connects from here to opts.host, as
across the slow link of netlink.DelayLink.

Servers start from an argument list (never a shell) in a session of their own, so the
whole process group (forked children, nginx workers) is signalled together:
SIGTERM, then SIGKILL after a grace period. That happens on success, on exceptions,
on timeouts and on Ctrl-C (KeyboardInterrupt runs __exit__ like any exception);
PR_SET_PDEATHSIG also kills the server if the harness itself is killed.
Exit status 77 at start means "this model is not supported here": Unsupported.
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
import sys
import tempfile
import threading
import time
from collections import deque
from pathlib import Path

from . import http
from .cgroup import CpuGroup
from .manifest import ROOT, Server, ServerOptions

READY_RE = re.compile(rb"^READY port=(\d+)\r?\n?$")
EXIT_UNSUPPORTED = 77
PR_SET_PDEATHSIG = 1


class ServerError(Exception):
    """The server did not start, did not answer correctly, or did not stop cleanly."""


class Unsupported(ServerError):
    """The server exited 77: its IO model is not supported on this machine."""


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


def process_group_states(pgid: int) -> dict[int, str]:
    """Every process whose process group is pgid, with its state letter (from /proc/*/stat).
    A zombie ("Z") is dead but not yet reaped: it holds no port, but still its CPU times."""
    states = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(b")") + 2:].split()
        if int(fields[2]) == pgid:  # fields[0] is the state, fields[2] the process group
            states[int(entry)] = fields[0].decode()
    return states


def live_group_states(pgid: int) -> dict[int, str]:
    """The live processes of the group with their states (zombies are already dead)."""
    return {pid: state for pid, state in process_group_states(pgid).items() if state != "Z"}


def process_group_pids(pgid: int) -> list[int]:
    """Every live process of the group."""
    return list(live_group_states(pgid))


def _child_setup() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class ServerProcess:
    """One running server. A context manager: leaving the block always stops it."""

    def __init__(self, server: Server, opts: ServerOptions | None = None, cpus: str | None = "0",
                 ready_timeout: float = 30.0, stop_timeout: float = 5.0, log_dir: Path | None = None,
                 netns: str | None = None, account_cpu: bool = True):
        self.server = server
        self.account_cpu = account_cpu
        self.cpu_group: CpuGroup | None = None  # set in start() when cgroups are writable
        self.opts = opts or ServerOptions()
        self.cpus = cpus
        self.netns = netns
        self.ready_timeout = ready_timeout
        self.stop_timeout = stop_timeout
        self._tmp = tempfile.TemporaryDirectory(prefix=f"iobench-{server.id}-")
        self.workdir = Path(self._tmp.name)
        self.log_path = (log_dir or self.workdir) / f"{server.id}.stderr.log"
        self.proc: subprocess.Popen | None = None
        self.port: int | None = None
        self.argv: list[str] = []
        self.exit_code: int | None = None
        self._stdout_tail: deque[bytes] = deque(maxlen=50)
        self._drain: threading.Thread | None = None

    # -- start ---------------------------------------------------------------------------
    def __enter__(self) -> "ServerProcess":
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            self.stop()
        except ServerError as stop_error:
            if exc_type is None:
                raise
            # Already failing (an error, Ctrl-C): a process that will not die must not
            # replace the exception on its way out (Ctrl-C still exits 130).
            print(f"warning: {stop_error}", file=sys.stderr)

    def start(self) -> None:
        opts = self.opts
        if self.server.ready == "port" and opts.port == 0:
            opts.port = free_port(opts.host)
        if self.server.prepare:
            self.server.prepare(opts, self.workdir)
        argv = self.server.argv(opts, self.workdir)
        if self.cpus is not None:
            argv = ["taskset", "-c", self.cpus] + argv
        if self.netns is not None:
            argv = ["ip", "netns", "exec", self.netns] + argv
        self.argv = argv
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "wb")
        # The server joins a CPU-accounting cgroup before it execs, so the CPU time of every
        # process it ever forks is counted, also of children that exit between two readings.
        self.cpu_group = CpuGroup.create(self.server.id) if self.account_cpu else None
        group = self.cpu_group

        def setup() -> None:
            _child_setup()
            if group is not None:
                group.join()

        self.proc = subprocess.Popen(argv, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=self._log, start_new_session=True, preexec_fn=setup)
        deadline = time.monotonic() + self.ready_timeout
        if self.server.ready == "line":
            self.port = self._wait_ready_line(deadline)
        else:
            self.port = self._wait_port(opts.host, opts.port, deadline)
        self._drain = threading.Thread(target=self._drain_stdout, daemon=True)
        self._drain.start()

    def _fail_start(self, what: str, deadline: float) -> None:
        """The server exited, or closed its stdout, before it was ready. Wait for its exit
        status until the READY deadline and no longer: one that lives on without a stdout
        is stopped here (SIGTERM, then SIGKILL), and the error says so."""
        try:
            code = self.proc.wait(max(0.0, deadline - time.monotonic()))
            status = _exit_status(code)
        except subprocess.TimeoutExpired:
            left = self._end_group(self.proc)
            code = self.proc.returncode
            status = (f"still running at the {self.ready_timeout:g} s READY deadline; stopped: "
                      + (_exit_status(code) if not left else f"processes {left} did not die"))
        self.exit_code = code
        tail = self.stderr_tail()
        if code == EXIT_UNSUPPORTED:
            raise Unsupported(f"{self.server.id}: not supported here (exit 77): {tail}")
        raise ServerError(f"{self.server.id}: {what} ({status}); argv={self.argv}; stderr: {tail}")

    def _wait_ready_line(self, deadline: float) -> int:
        assert self.proc and self.proc.stdout
        fd = self.proc.stdout.fileno()
        buf = b""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ServerError(f"{self.server.id}: no READY line within {self.ready_timeout:.0f} s; "
                                  f"stdout so far: {buf[-200:]!r}; stderr: {self.stderr_tail()}")
            ready, _, _ = select.select([fd], [], [], min(remaining, 0.2))
            if not ready:
                if self.proc.poll() is not None:
                    self._fail_start("exited before READY", deadline)
                continue
            chunk = os.read(fd, 4096)
            if not chunk:
                self._fail_start("closed stdout before READY", deadline)
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                m = READY_RE.match(line + b"\n")
                if m:
                    self._stdout_tail.append(buf)
                    return int(m.group(1))
                self._stdout_tail.append(line)

    def _wait_port(self, host: str, port: int, deadline: float) -> int:
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self._fail_start("exited before listening", deadline)
            if port_is_listening(host, port):
                return port
            time.sleep(0.02)
        raise ServerError(f"{self.server.id}: port {port} not listening within {self.ready_timeout:.0f} s")

    def _drain_stdout(self) -> None:
        # Keep reading so a chatty server never blocks on a full pipe; keep the tail.
        try:
            for line in self.proc.stdout:
                self._stdout_tail.append(line)
        except (ValueError, OSError):
            pass

    # -- checks --------------------------------------------------------------------------
    @property
    def pid(self) -> int:
        assert self.proc
        return self.proc.pid

    @property
    def url(self) -> str:
        return f"http://{self.opts.host}:{self.port}/"

    def verify(self, timeout: float = 5.0) -> http.Response | bytes:
        """GET / must answer 200 with the book's body, or the run stops here. A server kept
        as published by a source write-up (conforms=False) only has to answer something
        that starts like an HTTP 200: its bytes are whatever the write-up sent."""
        if not self.server.conforms:
            return self._verify_answers(timeout)
        try:
            resp = http.get(self.opts.host, self.port, "/", timeout=timeout)
        except (OSError, http.HttpError) as exc:
            raise ServerError(f"{self.server.id}: no valid answer to GET /: {exc}") from exc
        if resp.status != 200 or resp.body != http.BODY:
            raise ServerError(f"{self.server.id}: GET / answered {resp.status} with body {resp.body[:80]!r}, "
                              f"expected 200 with {http.BODY!r}")
        return resp

    def _verify_answers(self, timeout: float) -> bytes:
        got = b""
        try:
            with socket.create_connection((self.opts.host, self.port), timeout=timeout) as s:
                s.sendall(http.request_bytes("/", "HTTP/1.1"))
                s.settimeout(timeout)
                while len(got) < 4096:
                    try:
                        chunk = s.recv(4096)
                    except socket.timeout:
                        break  # it keeps the connection open: what came is the answer
                    if not chunk:
                        break
                    got += chunk
                    s.settimeout(0.5)  # the rest of a response comes at once, or not at all
        except OSError as exc:
            if not got:
                raise ServerError(f"{self.server.id}: no answer to GET /: {exc}") from exc
        if not got.startswith(b"HTTP/1.1 200"):
            raise ServerError(f"{self.server.id}: GET / answered {got[:80]!r}, expected an HTTP/1.1 200")
        return got

    def stderr_tail(self, limit: int = 2000) -> str:
        try:
            return self.log_path.read_bytes()[-limit:].decode(errors="replace").strip()
        except OSError:
            return ""

    # -- stop ----------------------------------------------------------------------------
    def stop(self) -> int | None:
        """SIGTERM the process group, SIGKILL after stop_timeout; wait until all of it is gone.
        A process still alive stop_timeout after SIGKILL (stuck in the kernel) is not waited
        for forever: everything else is cleaned up, then ServerError names it."""
        proc = self.proc
        if proc is None:
            self._tmp.cleanup()
            return None
        try:
            left = self._end_group(proc)
            self.exit_code = proc.returncode
            if self.cpu_group is not None:
                # A process that left the group (setsid) is still in the cgroup: it dies too.
                for pid in self.cpu_group.pids():
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                self.cpu_group.remove()
        finally:
            if proc.stdout:
                proc.stdout.close()
            if getattr(self, "_log", None):
                self._log.close()
            self.proc = None
            self._tmp.cleanup()
        if left:
            raise ServerError(f"{self.server.id}: processes {left} (pid: state) of group {proc.pid} still alive "
                              f"{self.stop_timeout:g} s after SIGKILL; argv={self.argv}")
        return self.exit_code

    def _end_group(self, proc: subprocess.Popen) -> dict[int, str]:
        """SIGTERM the whole group, SIGKILL what is left after stop_timeout, and wait for it
        another stop_timeout at most. Returns what is still alive then ({} normally), and
        reaps the leader, whose exit status is then proc.returncode."""
        pgid = proc.pid  # a new session: the leader's pid is the group id
        kill_at = time.monotonic() + self.stop_timeout
        give_up_at = kill_at + self.stop_timeout
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
                self._signal_group(pgid, signal.SIGTERM)
                sent = signal.SIGTERM
            elif now >= kill_at and sent == signal.SIGTERM:
                # The leader and any children it left behind (forked workers) die together.
                self._signal_group(pgid, signal.SIGKILL)
                sent = signal.SIGKILL
            time.sleep(0.02)
        try:
            proc.wait(1.0)  # the leader is dead: at most a zombie, reaped at once
        except subprocess.TimeoutExpired:  # pragma: no cover - a dead leader is always reaped
            pass
        return {}

    @staticmethod
    def _signal_group(pgid: int, sig: int) -> None:
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            pass
        except PermissionError as exc:  # pragma: no cover - only when pids are reused
            if exc.errno != errno.EPERM:
                raise

    @property
    def stopped_cleanly(self) -> bool:
        """Exit 0 on SIGTERM is the contract; nginx exits 0 on SIGTERM too."""
        return self.exit_code == 0


def _exit_status(code: int | None) -> str:
    """How a process ended, as the error messages say it: "exit 1", "killed by SIGKILL"."""
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit {code}"
