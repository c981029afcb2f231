"""iom-idle, the holder of idle keep-alive connections: against c-epoll it spreads them over
source addresses and gets every one answered; against a server that never answers it counts
them unanswered at its deadline and keeps them; it sees a server close them; it sits still
while it holds them; and it refuses bad arguments (exit 1) and too few descriptors (exit 2)."""
import json
import os
import resource
import select
import signal
import socket
import subprocess
import threading
import time
from collections import Counter

import pytest

from iobench.run.lifecycle import ServerProcess
from iobench.servers.manifest import CODE, ServerOptions, get

BUILD = CODE / "c" / "build"
SANITIZER_REPORT = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")


@pytest.fixture(scope="module", autouse=True)
def built():
    subprocess.run(["make", "-s", "-C", str(CODE / "c"), "all", "asan"], check=True)


class Idle:
    """iom-idle running: its IDLE line once set up, its IDLE_END line once stopped."""

    def __init__(self, *args: str, build: str = "opt", preexec_fn=None):
        binary = BUILD / "asan" / "iom-idle" if build == "asan" else BUILD / "iom-idle"
        self.proc = subprocess.Popen([str(binary), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, preexec_fn=preexec_fn)

    def idle(self, timeout: float = 30.0) -> dict:
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        assert ready, f"no IDLE line within {timeout:g} s"
        line = self.proc.stdout.readline()
        assert line.startswith("IDLE {"), (line, self.proc.stderr.read() if self.proc.poll() is not None else "")
        return json.loads(line[len("IDLE "):])

    def stop(self, sig: int = signal.SIGTERM) -> dict:
        self.proc.send_signal(sig)
        out, err = self.proc.communicate(timeout=20)
        assert not any(marker in err for marker in SANITIZER_REPORT), err[-4000:]
        assert self.proc.returncode == 0 and err == "", (self.proc.returncode, err[-2000:])
        lines = out.splitlines()
        assert len(lines) == 1 and lines[0].startswith("IDLE_END {"), out
        return json.loads(lines[0][len("IDLE_END "):])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


def sources_seen(port: int) -> Counter:
    """Established connections to port on this machine, by local address."""
    out = subprocess.run(["ss", "-Htn", "state", "established", f"( dport = :{port} )"],
                         capture_output=True, text=True, check=True).stdout
    return Counter(line.split()[2].rsplit(":", 1)[0] for line in out.splitlines())


def cpu_s(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


@pytest.mark.parametrize("build", ["opt", "asan"])
def test_c_epoll_answers_all_over_two_sources_and_idle_costs_no_cpu(build, tmp_path):
    with ServerProcess(get("c-epoll"), ServerOptions(), cpus=None, log_dir=tmp_path) as srv:
        with Idle("--port", str(srv.port), "--connections", "3000", "--per-source", "2000", build=build) as idle:
            report = idle.idle()
            assert report == {"connections": 3000, "established": 3000, "answered": 3000, "unanswered": 0,
                              "failed": 0, "held": 3000, "errors": {}, "sources": ["127.0.1.1", "127.0.1.2"],
                              "setup_s": report["setup_s"]}
            assert sources_seen(srv.port) == {"127.0.1.1": 2000, "127.0.1.2": 1000}
            before = cpu_s(idle.proc.pid)
            time.sleep(1.0)
            assert cpu_s(idle.proc.pid) - before < 0.02, "busy while holding"
            assert idle.stop() == {"held": 3000, "closed_by_server": 0}


def test_the_harness_spreads_a_step_over_as_many_holders_as_one_process_may_hold(tmp_path, monkeypatch):
    """IdleConnections: 2,500 idle connections where one holder may hold 1,000 take three holders, each on its
    own addresses, every connection answered, and the merged report counts them all."""
    from iobench.load import idle

    monkeypatch.setattr(idle, "per_process", lambda: 1000)
    kept = []
    with ServerProcess(get("c-epoll"), ServerOptions(), cpus=None, log_dir=tmp_path) as srv:
        with idle.IdleConnections("127.0.0.1", srv.port, [], lambda i, h: kept.append(i)) as held:
            assert held.hold(500)["held"] == 500
            report = held.hold(2500)
            assert report["holders"] == 2 and report["connections"] == report["answered"] == 2000
            assert held.asked == held.answered == 2500 and held.stopped_at is None
            assert sources_seen(srv.port) == {"127.0.1.1": 500, "127.0.2.1": 1000, "127.0.3.1": 1000}
            assert held.hold(2000) == {}   # never lowers
    assert kept == [1, 2, 3] and all(h.end == {"held": h.setup["held"], "closed_by_server": 0} for h in held.holders)


def test_no_request_only_connects(tmp_path):
    with ServerProcess(get("c-epoll"), ServerOptions(), cpus=None, log_dir=tmp_path) as srv:
        with Idle("--port", str(srv.port), "--connections", "100", "--no-request") as idle:
            report = idle.idle()
            assert (report["established"], report["answered"], report["unanswered"], report["held"]) == (100, 0, 0, 100)
            assert idle.stop(signal.SIGINT) == {"held": 100, "closed_by_server": 0}


@pytest.fixture
def silent_server():
    """Accepts every connection and keeps it, reading nothing and answering nothing."""
    listener = socket.create_server(("127.0.0.1", 0), backlog=512)
    kept, stop = [], threading.Event()

    def accept():
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                kept.append(listener.accept()[0])
            except socket.timeout:
                pass
    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    thread.join(5)
    for s in kept:
        s.close()
    listener.close()


def test_unanswered_are_counted_at_the_deadline_and_kept(silent_server):
    t0 = time.monotonic()
    with Idle("--port", str(silent_server), "--connections", "50", "--timeout-s", "1") as idle:
        report = idle.idle()
        took = time.monotonic() - t0
        assert (report["established"], report["answered"], report["unanswered"], report["failed"]) == (50, 0, 50, 0)
        # it waits the whole deadline and then stops waiting (a slow host may add to it, never take away)
        assert 1.0 <= report["setup_s"] < 5 and took < 10, (report, took)
        assert idle.stop() == {"held": 50, "closed_by_server": 0}


def test_a_stop_during_set_up_still_reports_both_lines(silent_server):
    """SIGTERM before the deadline: what there is so far (all unanswered), then the end."""
    with Idle("--port", str(silent_server), "--connections", "20", "--timeout-s", "60") as idle:
        time.sleep(0.5)
        idle.proc.send_signal(signal.SIGTERM)
        out, err = idle.proc.communicate(timeout=10)
    assert idle.proc.returncode == 0 and err == "", err
    first, end = out.splitlines()
    assert json.loads(first.removeprefix("IDLE "))["unanswered"] == 20, first
    assert json.loads(end.removeprefix("IDLE_END ")) == {"held": 20, "closed_by_server": 0}, end


def test_refused_connections_fail_with_their_errno():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        with Idle("--port", str(port), "--connections", "10", "--in-flight", "4") as idle:
            report = idle.idle()
            assert (report["failed"], report["held"], report["errors"]) == (10, 0, {"ECONNREFUSED": 10})
            assert idle.stop() == {"held": 0, "closed_by_server": 0}


@pytest.mark.parametrize("build", ["opt", "asan"])
def test_sees_the_server_close_idle_connections(build, tmp_path):
    """c-thread with --idle-timeout-s 1 drops every connection silent for a second."""
    with ServerProcess(get("c-thread"), ServerOptions(idle_timeout_s=1), cpus=None, log_dir=tmp_path) as srv:
        with Idle("--port", str(srv.port), "--connections", "200", build=build) as idle:
            assert idle.idle()["answered"] == 200
            time.sleep(2.5)
            assert idle.stop() == {"held": 200, "closed_by_server": 200}


@pytest.mark.parametrize("args", [
    [],
    ["--connections", "10"],                       # no --port
    ["--port", "8080"],                            # no --connections
    ["--port", "8080", "--connections", "lots"],
    ["--port", "0", "--connections", "10"],
    ["--port", "8080", "--connections", "10", "--source", "localhost"],
    ["--port", "8080", "--connections", "10", "--per-source", "0"],
    ["--port", "8080", "--connections", "10", "--no-such-flag"],
    ["--port", "8080", "--connections", "10", "extra"],
])
def test_bad_arguments_exit_1_with_usage(args):
    done = subprocess.run([str(BUILD / "iom-idle"), *args], capture_output=True, text=True, timeout=10)
    assert done.returncode == 1 and "usage:" in done.stderr and done.stdout == "", done.stderr


def test_too_few_descriptors_exit_2_naming_the_limit():
    def limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
    with Idle("--port", "8080", "--connections", "100", preexec_fn=limit) as idle:
        out, err = idle.proc.communicate(timeout=10)
    assert idle.proc.returncode == 2 and out == "", (idle.proc.returncode, out, err)
    assert "RLIMIT_NOFILE" in err and "hard limit 64" in err and "100 connections" in err, err


def test_raises_its_soft_descriptor_limit_to_the_hard_one(tmp_path):
    def limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 4096))
    with ServerProcess(get("c-epoll"), ServerOptions(), cpus=None, log_dir=tmp_path) as srv:
        with Idle("--port", str(srv.port), "--connections", "500", preexec_fn=limit) as idle:
            assert idle.idle()["answered"] == 500
            assert idle.stop() == {"held": 500, "closed_by_server": 0}
