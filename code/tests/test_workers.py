"""c-epoll-workers: the epoll loop in worker processes, as nginx runs it. Every worker serves, the
connections are spread by the sharing mode, N workers hold more connections than one process's
descriptor limit allows, and no worker outlives its parent, stopped or killed."""
import re
import resource
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from iobench.run.procs import process_group_pids
from iobench.servers.manifest import C_BUILD

SERVER = C_BUILD / "c-epoll-workers"
GET = b"GET / HTTP/1.1\r\nHost: t\r\n\r\n"
WORKER = re.compile(r"WORKER (\d+) pid=(\d+) accepted=(\d+) wakeups=(\d+) empty=(\d+)")


@pytest.fixture(scope="module", autouse=True)
def built():
    subprocess.run(["make", "-s", "-C", str(C_BUILD.parent), "build/c-epoll-workers"], check=True)


def start(*args, counts: Path | None = None, nofile: int | None = None) -> tuple[subprocess.Popen, int]:
    def limit():
        if nofile:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    flags = ["--worker-counts", str(counts)] if counts else []
    p = subprocess.Popen([str(SERVER), "--port", "0", *flags, *args],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                         preexec_fn=limit)
    line = p.stdout.readline()
    assert line.startswith("READY port="), (line, p.stderr.read() if p.poll() is not None else "")
    return p, int(line.split("=")[1])


def ask(port: int, n: int) -> list[socket.socket]:
    """n connections, each asked once and answered; returned open (idle)."""
    conns = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(GET)
        assert s.recv(4096).startswith(b"HTTP/1.1 200"), "every connection answered"
        conns.append(s)
    return conns


def stop(p: subprocess.Popen, counts: Path) -> dict[int, tuple[int, int, int]]:
    """SIGTERM to the parent alone: a clean exit, nothing said; every worker's counts (accepted, wakeups,
    empty) from its line in the --worker-counts file."""
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=10)
    assert p.returncode == 0 and err == "", err
    return {int(m[1]): (int(m[3]), int(m[4]), int(m[5])) for m in WORKER.finditer(counts.read_text())}


def gone(pgid: int, within_s: float = 5.0) -> bool:
    deadline = time.monotonic() + within_s
    while process_group_pids(pgid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not process_group_pids(pgid)


@pytest.mark.parametrize("share", ["reuseport", "exclusive", "herd"])
def test_every_mode_answers_every_connection_and_stops_every_worker(share, tmp_path):
    p, port = start("--pool", "3", "--share", share, counts=tmp_path / "counts")
    pgid = p.pid
    assert len(process_group_pids(pgid)) == 4                  # the parent and its three workers
    conns = ask(port, 60)
    counts = stop(p, tmp_path / "counts")
    for s in conns:
        s.close()
    assert sorted(counts) == [0, 1, 2] and sum(a for a, _, _ in counts.values()) == 60
    if share == "reuseport":   # the kernel hashes each new connection to one socket: all three get some
        assert min(a for a, _, _ in counts.values()) > 0, counts
    assert gone(pgid)


def test_workers_hold_more_connections_than_one_process_may_have_descriptors(tmp_path):
    """With 64 descriptors a process, one loop holds at most about 60 connections; four workers hold 150."""
    p, port = start("--pool", "4", counts=tmp_path / "counts", nofile=64)
    conns = ask(port, 150)          # each stays open: 150 at once, over four processes' limits
    counts = stop(p, tmp_path / "counts")
    for s in conns:
        s.close()
    assert sum(a for a, _, _ in counts.values()) == 150 and max(a for a, _, _ in counts.values()) < 64


def test_a_killed_parent_takes_its_workers_along():
    p, port = start("--pool", "3")
    pgid = p.pid
    ask(port, 3)
    p.send_signal(signal.SIGKILL)
    p.wait(5)
    assert gone(pgid), process_group_pids(pgid)


def test_a_bad_sharing_mode_is_a_clear_error():
    r = subprocess.run([str(SERVER), "--share", "round-robin"], capture_output=True, text=True, timeout=5)
    assert r.returncode == 1 and "--share must be reuseport, exclusive or herd" in r.stderr
