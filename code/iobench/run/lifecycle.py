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

A server whose wait is a real database (role "db") gets one of its own: unless opts.db names one, a throwaway
PostgreSQL (run/postgres.py) starts first, pinned to db_cpus (the server's cores unless told), and goes after the
server, whatever ended the block; `srv.database` is it (its CPU, its processes, its metadata).
"""
from __future__ import annotations

import dataclasses
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from pathlib import Path

from iobench.run import procs
from iobench.run.cgroup import CpuGroup
from iobench.run.procs import EXIT_UNSUPPORTED, free_port, port_is_listening
from iobench.servers import http
from iobench.servers.manifest import ROOT, Ready, Server, ServerOptions, Verify

READY_RE = re.compile(rb"^READY port=(\d+)\r?$")


class ServerError(Exception):
    """The server did not start, did not answer correctly, or did not stop cleanly."""


class Unsupported(ServerError):
    """The server exited 77: its IO model is not supported on this machine."""


class StartError(ServerError):
    """The server exited (or closed its stdout) before it was ready: it refused its flags, could not bind, or
    could not set up. `said` is the last thing it wrote on stderr, in its own words."""

    def __init__(self, message: str, server_id: str = "", said: str = ""):
        super().__init__(message)
        self.server_id = server_id
        self.said = said


class ServerProcess(procs.Started):
    """One running server. A context manager: leaving the block always stops it."""

    def __init__(self, server: Server, opts: ServerOptions | None = None, cpus: str | None = "0",
                 ready_timeout: float = 30.0, stop_timeout: float = 5.0, log_dir: Path | None = None,
                 netns: str | None = None, account_cpu: bool = True, db_cpus: str | None = "same"):
        self.server = server
        self.db_cpus = cpus if db_cpus == "same" else db_cpus
        self.database = None  # a Postgres, for a server of role "db" given no opts.db
        self.account_cpu = account_cpu
        self.cpu_group: CpuGroup | None = None  # set in start() when cgroups are writable
        # A copy: the port the server ends up on is self.port, never written into the caller's options.
        self.opts = dataclasses.replace(opts) if opts is not None else ServerOptions()
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
        self._stderr_at_stop = ""

    # -- start ---------------------------------------------------------------------------
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
        if self.server.role == "db" and opts.db is None:
            from iobench.run.postgres import Postgres
            self.database = Postgres(cpus=self.db_cpus, account_cpu=self.account_cpu)
            self.database.start()
            opts.db = self.database.dsn
        if self.server.ready is Ready.PORT and opts.port == 0:
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
        self.proc = procs.spawn(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=self._log,
                                in_child=self.cpu_group.join if self.cpu_group else None)
        deadline = time.monotonic() + self.ready_timeout
        if self.server.ready is Ready.LINE:
            try:
                m, rest = procs.wait_line(self.proc, READY_RE, deadline, keep=self._stdout_tail.append)
            except procs.NotReady as exc:
                if exc.why == "timeout":
                    raise ServerError(f"{self.server.id}: no READY line within {self.ready_timeout:.0f} s; "
                                      f"stdout so far: {exc.seen[-200:]!r}; stderr: {self.stderr_tail()}") from None
                self._fail_start(f"{'exited' if exc.why == 'exited' else 'closed stdout'} before READY", deadline)
            self._stdout_tail.append(rest)
            self.port = int(m.group(1))
        else:
            self.port = self._wait_port(opts.host, opts.port, deadline)
        self._drain = threading.Thread(target=self._drain_stdout, args=(self.proc.stdout,), daemon=True)
        self._drain.start()

    def _fail_start(self, what: str, deadline: float) -> None:
        """The server exited, or closed its stdout, before it was ready. Wait for its exit
        status until the READY deadline and no longer: one that lives on without a stdout
        is stopped here (SIGTERM, then SIGKILL), and the error says so."""
        try:
            code = self.proc.wait(max(0.0, deadline - time.monotonic()))
            status = procs.exit_status(code)
        except subprocess.TimeoutExpired:
            left = procs.stop_group(self.proc, self.stop_timeout)
            code = self.proc.returncode
            status = (f"still running at the {self.ready_timeout:g} s READY deadline; stopped: "
                      + (procs.exit_status(code) if not left else f"processes {left} did not die"))
        self.exit_code = code
        tail = self.stderr_tail()
        if code == EXIT_UNSUPPORTED:
            raise Unsupported(f"{self.server.id}: not supported here (exit 77): {tail}")
        said = next((line for line in tail.splitlines() if line.strip()), "")  # a refusal's first line says why
        raise StartError(f"{self.server.id}: {what} ({status}); argv={self.argv}; stderr: {tail}",
                         self.server.id, said.strip())

    def _wait_port(self, host: str, port: int, deadline: float) -> int:
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self._fail_start("exited before listening", deadline)
            if port_is_listening(host, port):
                return port
            time.sleep(0.02)
        raise ServerError(f"{self.server.id}: port {port} not listening within {self.ready_timeout:.0f} s")

    def _drain_stdout(self, stdout) -> None:
        """Keep reading so a chatty server never blocks on a full pipe; keep the tail. Ends at
        EOF, when the whole process group is gone (stop() waits for that, then closes the pipe)."""
        try:
            for line in stdout:
                self._stdout_tail.append(line)
        except (ValueError, OSError):  # stop() closed the pipe: a process outside the group kept it open
            pass

    # -- checks --------------------------------------------------------------------------
    @property
    def pid(self) -> int:
        assert self.proc
        return self.proc.pid

    @property
    def host(self) -> str:
        return self.opts.host

    @property
    def url(self) -> str:
        return f"http://{self.opts.host}:{self.port}/"

    def verify(self, timeout: float = 5.0) -> http.Response | bytes | None:
        """Check the first answer as the manifest says (Server.verify), or stop the run here."""
        if self.server.verify is Verify.CONTRACT:
            return self._verify_contract(timeout)
        if self.server.verify is Verify.ANSWERS:
            return self._verify_answers(timeout)
        return None  # Verify.BY_EXPERIMENT: the experiment checks it (echo: from the client's namespace)

    def _verify_contract(self, timeout: float) -> http.Response:
        """A GET of its route (GET /) must answer 200 with the route's body (the book's)."""
        route = self.server.route
        try:
            resp = http.get(self.opts.host, self.port, route.path, timeout=timeout)
        except (OSError, http.HttpError) as exc:
            raise ServerError(f"{self.server.id}: no valid answer to GET {route.path}: {exc}") from exc
        if resp.status != 200 or resp.body != route.body:
            raise ServerError(f"{self.server.id}: GET {route.path} answered {resp.status} with body "
                              f"{resp.body[:80]!r}, expected 200 with {route.body!r}")
        return resp

    def _verify_answers(self, timeout: float) -> bytes:
        """A server kept as a source write-up published it only has to answer something that
        starts like an HTTP 200: its bytes are whatever the write-up sent."""
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

    def lost(self) -> str | None:
        """Why this server can no longer be measured, in words (None while it runs and its port is open): it exited
        (its status and last word on stderr), or its listening socket is gone (a connection refused). A connection
        that only waits (a full backlog) is not a loss: it is what some points measure."""
        if self.proc is None:
            return None
        code = self.proc.poll()
        if code is not None:
            said = procs.last_line(self.stderr_tail(600))
            return (f"{self.server.id} {'died' if code < 0 else 'exited by itself'} ({procs.exit_status(code)})"
                    + (f"; its last word on stderr: {said}" if said else ""))
        if self.port and self.server.verify is not Verify.BY_EXPERIMENT and procs.port_refuses(self.opts.host,
                                                                                                 self.port):
            return f"{self.server.id} is running but refuses connections on port {self.port}"
        return None

    def stdout_tail(self) -> bytes:
        """The last 50 lines the server printed (complete once it stopped)."""
        return b"".join(self._stdout_tail)

    def stderr_tail(self, limit: int = 2000) -> str:
        """The end of what the server wrote on stderr (kept once it stopped and its folder went)."""
        try:
            return self.log_path.read_bytes()[-limit:].decode(errors="replace").strip()
        except OSError:
            return self._stderr_at_stop[-limit:]

    # -- stop ----------------------------------------------------------------------------
    def stop(self) -> int | None:
        """SIGTERM the process group, SIGKILL after stop_timeout; wait until all of it is gone.
        A process still alive stop_timeout after SIGKILL (stuck in the kernel) is not waited
        for forever: everything else is cleaned up, then ServerError names it."""
        proc = self.proc
        if proc is None:
            self._tmp.cleanup()
            self._stop_database()
            return None
        try:
            left = procs.stop_group(proc, self.stop_timeout)
            self.exit_code = proc.returncode
            if self.cpu_group is not None:
                # A process that left the group (setsid) is still in the cgroup: it dies too.
                for pid in self.cpu_group.pids():
                    procs.kill(pid)
                self.cpu_group.remove()
        finally:
            if self._drain is not None:
                self._drain.join(timeout=1.0)  # the group is gone: its EOF is on the way
            if proc.stdout:
                proc.stdout.close()
            if getattr(self, "_log", None):
                self._log.close()
            self.proc = None
            self._stderr_at_stop = self.stderr_tail()
            self._tmp.cleanup()
            self._stop_database()
        if left:
            raise ServerError(f"{self.server.id}: processes {left} (pid: state) of group {proc.pid} still alive "
                              f"{self.stop_timeout:g} s after SIGKILL; argv={self.argv}")
        return self.exit_code

    def companions(self) -> dict:
        """What the harness started beside the server for it, by name, with a CPU account of its own (CpuGroup): its
        database. The runner counts their CPU apart from the server's, and not as foreign."""
        if self.database is not None and self.database.cpu_group is not None:
            return {"database": self.database.cpu_group}
        return {}

    def _stop_database(self) -> None:
        """The server's own database goes after it (the server first: its connections close with it)."""
        if self.database is not None:
            database, self.database = self.database, None
            database.stop()

    @property
    def stopped_cleanly(self) -> bool:
        """Exit 0 on SIGTERM is the contract; nginx exits 0 on SIGTERM too."""
        return self.exit_code == 0
