"""Servers always stop: after success, failure, timeout, Ctrl-C and even a killed harness,
no process of theirs is left and their port is free."""
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from iobench.run import cgroup, procs
from iobench.run.lifecycle import ServerError, ServerProcess, Unsupported
from iobench.run.procs import free_port, port_is_listening, process_group_pids
from iobench.servers.manifest import Server, ServerOptions

HERE = Path(__file__).resolve().parent
CODE = HERE.parent


def contract_server(mode: str = "ok") -> Server:
    return Server(id=f"test-{mode}", model="test", lang="Python", summary="test server",
                  argv=lambda o, w: [sys.executable, str(HERE / "servers" / "contract_server.py"),
                                     "--port", str(o.port), "--mode", mode])


# Writes its own process group id to a file (one line per start), then execs the server:
# the pid stays the same, so a test knows which group to look for after the harness is done.
RECORD_PGID = ('import os, sys; open(sys.argv[1], "a").write(f"{os.getpgid(0)}\\n"); '
               'os.execv(sys.argv[2], sys.argv[2:])')


def recorded(argv: list[str], pgid_file: Path) -> list[str]:
    return [sys.executable, "-c", RECORD_PGID, str(pgid_file)] + argv


def recorded_pgids(pgid_file: Path) -> list[int]:
    return [int(line) for line in pgid_file.read_text().split()] if pgid_file.exists() else []


def recorded_server(mode: str, port: int, pgid_file: Path) -> Server:
    """contract_server(mode) on a fixed port, recording each start's process group."""
    return Server(id=f"test-{mode}", model="test", lang="Python", summary="test server",
                  argv=lambda o, w: recorded([sys.executable, str(HERE / "servers" / "contract_server.py"),
                                              "--port", str(port), "--mode", mode], pgid_file))


def assert_gone(pgid: int, port: int | None) -> None:
    # No live process of the group (a dead child that init has not reaped yet is a zombie:
    # it holds no port, no memory and runs nothing).
    assert process_group_pids(pgid) == []
    if port:
        assert not port_is_listening("127.0.0.1", port)
        with socket.socket() as s:  # and it can be bound again
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", port))


def test_success_stops_with_exit_0_and_frees_the_port():
    with ServerProcess(contract_server(), cpus="0") as srv:
        resp = srv.verify()
        assert resp.status == 200
        pgid, port = srv.pid, srv.port
        assert srv.argv[:3] == ["taskset", "-c", "0"]  # pinned, started without a shell
    assert srv.exit_code == 0 and srv.stopped_cleanly
    assert_gone(pgid, port)


def test_exception_inside_the_block_still_stops_the_server():
    with pytest.raises(RuntimeError):
        with ServerProcess(contract_server(), cpus=None) as srv:
            pgid, port = srv.pid, srv.port
            raise RuntimeError("the benchmark failed")
    assert_gone(pgid, port)


def test_no_ready_line_times_out_and_leaves_nothing(tmp_path):
    port, pgids = free_port(), tmp_path / "pgids"
    srv = ServerProcess(recorded_server("never-ready", port, pgids), cpus=None, ready_timeout=1.0)
    with pytest.raises(ServerError, match="no READY line"):
        with srv:
            pass
    assert srv.proc is None
    assert srv.exit_code == 0  # it was stopped with SIGTERM
    [pgid] = recorded_pgids(pgids)
    assert_gone(pgid, port)


# Listens, then closes its stdout without a READY line and lives on (with a forked child).
CLOSES_STDOUT = """
import os, socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8)
os.close(1)
os.fork()
time.sleep(8)
"""


def test_closed_stdout_before_ready_still_keeps_the_deadline(tmp_path):
    """No READY line and no exit either: the READY deadline holds, then the group is stopped."""
    port, pgids = free_port(), tmp_path / "pgids"
    server = Server(id="test-closes-stdout", model="test", lang="Python", summary="test server",
                    argv=lambda o, w: recorded([sys.executable, "-c", CLOSES_STDOUT, str(port)], pgids))
    t0 = time.monotonic()
    with pytest.raises(ServerError, match=r"closed stdout before READY \(still running at the 1 s READY "
                                          r"deadline; stopped: killed by SIGTERM\)"):
        with ServerProcess(server, cpus=None, ready_timeout=1.0):
            pass
    assert 0.9 < time.monotonic() - t0 < 3.0  # the deadline, not the server's 8 s
    [pgid] = recorded_pgids(pgids)
    assert_gone(pgid, port)


def test_stop_gives_up_on_a_process_that_never_dies(monkeypatch):
    """A process that outlives SIGKILL (stuck in the kernel, faked here) is reported, not
    waited for forever; the real server is stopped all the same."""
    real_states = procs.process_group_states
    monkeypatch.setattr(procs, "process_group_states", lambda pgid: {**real_states(pgid), 4 * 10**9: "D"})
    srv = ServerProcess(contract_server(), cpus=None, stop_timeout=0.3)
    srv.start()
    pgid, port = srv.pid, srv.port
    errors = []

    def stop():
        try:
            srv.stop()
        except ServerError as exc:
            errors.append(exc)

    t0 = time.monotonic()
    stopper = threading.Thread(target=stop, daemon=True)
    stopper.start()
    stopper.join(10)
    assert not stopper.is_alive(), "stop() still waiting after 10 s"
    assert time.monotonic() - t0 < 3.0  # SIGTERM, 0.3 s, SIGKILL, 0.3 s, give up
    assert len(errors) == 1 and re.search(r"processes \{.*4000000000: 'D'.*\} .* still alive 0.3 s after SIGKILL",
                                          str(errors[0]))
    assert srv.proc is None
    monkeypatch.undo()
    assert_gone(pgid, port)


def test_exit_77_means_unsupported():
    with pytest.raises(Unsupported, match="feature this kernel lacks"):
        with ServerProcess(contract_server("unsupported"), cpus=None):
            pass


def test_setup_error_reports_the_failing_call():
    with pytest.raises(ServerError, match="exit 1.*bind: Address already in use"):
        with ServerProcess(contract_server("setup-error"), cpus=None):
            pass


def test_wrong_response_fails_verification():
    with ServerProcess(contract_server("wrong-body"), cpus=None) as srv:
        with pytest.raises(ServerError, match="expected 200"):
            srv.verify()
        pgid, port = srv.pid, srv.port
    assert_gone(pgid, port)


def test_sigterm_ignored_means_sigkill():
    srv = ServerProcess(contract_server("ignore-term"), cpus=None, stop_timeout=0.5)
    with srv:
        pgid, port = srv.pid, srv.port
    assert srv.exit_code == -signal.SIGKILL and not srv.stopped_cleanly
    assert_gone(pgid, port)


def test_forked_children_are_stopped_with_the_group():
    srv = ServerProcess(contract_server("fork-child"), cpus=None, stop_timeout=1.0)
    with srv:
        pgid, port = srv.pid, srv.port
        deadline = time.monotonic() + 5
        while len(process_group_pids(pgid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(process_group_pids(pgid)) == 2
    assert_gone(pgid, port)


# As iobench's command line does: a shell starts background jobs (a nohup'd `make test`, a CI
# step) with SIGINT ignored, and a Python started that way never raises KeyboardInterrupt.
HARNESS = """
import signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
sys.path.insert(0, {code!r}); sys.path.insert(0, {tests!r})
from test_lifecycle import contract_server
from iobench.run.lifecycle import ServerProcess
with ServerProcess(contract_server(), cpus=None) as srv:
    print(srv.pid, srv.port, flush=True)
    time.sleep(60)
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_interrupted_harness_leaves_no_server(sig):
    """Ctrl-C (SIGINT) runs the cleanup; even SIGKILL of the harness takes the server down."""
    harness = subprocess.Popen([sys.executable, "-c", HARNESS.format(code=str(CODE), tests=str(HERE))],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pgid, port = map(int, harness.stdout.readline().split())
    assert port_is_listening("127.0.0.1", port)
    harness.send_signal(sig)
    harness.wait(10)
    deadline = time.monotonic() + 5
    while process_group_pids(pgid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert_gone(pgid, port)
    if sig == signal.SIGINT:
        assert "KeyboardInterrupt" in harness.stderr.read()
    # The CPU-accounting group of its server: removed by the harness, or, killed, by the next one.
    roots = list({r.resolve(): r for r in (cgroup.V2_ROOT, *cgroup.V1_ROOTS) if (r / "cgroup.procs").exists()}.values())
    left = [g for r in roots for g in r.glob(f"iobench-test-ok-{harness.pid}-*")]
    if sig == signal.SIGKILL:
        assert left or not roots or os.geteuid() != 0  # killed, it could not remove it itself
        assert sorted(g for r in roots for g in cgroup.sweep(r) if g in left) == sorted(left)
    assert [g for g in left if g.exists()] == []


def test_baselines_start_verify_and_stop():
    from iobench.servers.manifest import get

    for sid in ("nginx", "python-http-server"):
        with ServerProcess(get(sid), ServerOptions(), cpus=None) as srv:
            srv.verify()
            pgid, port = srv.pid, srv.port
        assert srv.exit_code == 0, f"{sid} exited {srv.exit_code}"
        assert_gone(pgid, port)
