"""One runner for every experiment: the generator-bound rule lives in one place and holds
for echo rows too; `iobench serve` starts and stops every server of the manifest; the
harness's modules stay small."""
import os
import re
import select
import signal
import statistics
import subprocess
import time
from pathlib import Path

import pytest

from iobench import registry
from iobench.kinds.echo import experiment as echo_experiment
from iobench.kinds.echo import plans as echo_plans
from iobench.kinds.http import plans
from iobench.kinds.http.experiment import HttpExperiment
from iobench.run import runner, sampler
from iobench.run.procs import EXIT_UNSUPPORTED, port_is_listening, process_group_pids
from iobench.servers import http, manifest

CODE = Path(__file__).resolve().parents[1]
IOBENCH = CODE / "bin" / "iobench"


# ---- the generator-bound rule --------------------------------------------------------------

def test_generator_bound_counts_the_threads_the_generator_has_and_may_use():
    # One thread, unpinned on a 2-core machine: 95 % of one core is the bottleneck. The echo
    # runner used to multiply by every CPU and could never flag an unpinned echo row.
    assert runner.generator_bound(95.0, threads=1, client_cpus=None)
    assert runner.generator_bound(95.0, threads=1, client_cpus="1")
    assert not runner.generator_bound(85.0, threads=1, client_cpus="1")
    # Eight wrk threads pinned to one core: one core's worth is the limit.
    assert runner.generator_bound(92.0, threads=8, client_cpus="1")
    assert not runner.generator_bound(92.0, threads=2, client_cpus="0-1")


def test_the_rule_and_its_threshold_are_written_once():
    harness = CODE / "iobench"
    users = [p.relative_to(harness).as_posix() for p in sorted(harness.rglob("*.py"))
             if re.search(r"GENERATOR_BOUND_PCT\s*\*|client_pct\s*>=", p.read_text())]
    assert users == ["run/runner.py"]


def test_every_dataset_is_an_experiment_of_the_one_runner():
    for name in registry.names():
        ex = registry.experiment(name)
        assert isinstance(ex, runner.Experiment) and ex.dataset == name
    assert isinstance(registry.experiment("c-servers"), HttpExperiment)
    assert isinstance(registry.experiment("echo-sweep"), echo_experiment.EchoExperiment)
    with pytest.raises(KeyError, match="unknown dataset 'nope'; known: .*echo-sweep"):
        registry.experiment("nope")


def test_server_ids_are_written_once():
    # the captured C datasets name registered servers, in the manifest's order; only servers
    # registered after the capture are missing
    assert plans.C_SERVERS.servers[1:] == plans.C_MEASURED
    assert plans.C_MEASURED == tuple(s for s in manifest.ids("C") if s in plans.C_MEASURED)
    assert set(manifest.ids("C")) - set(plans.C_MEASURED) == {"c-uring-multishot", "c-epoll-workers"}
    assert plans.JAVA_SERVERS.servers[1:] == manifest.ids("Java")
    assert echo_plans.ECHO_VERSIONS == tuple(manifest.ECHO_SERVERS)


@pytest.mark.live  # a ratio of two wall-clock readings on a shared core (a VM's steal moves it): make test-live
def test_the_speed_probe_sees_a_core_that_runs_slower():
    """sampler.core_loop_ms, recorded beside every measured run: on a core shared with two busy processes the
    same loop takes about three times as long (the slow phases of the rpc-provider run, which nothing else
    recorded, doubled it)."""
    mine = os.sched_getaffinity(0)
    alone = statistics.median(sampler.core_loop_ms("1") for _ in range(5))
    hogs = [subprocess.Popen(["taskset", "-c", "1", "python3", "-c", "while True: pass"]) for _ in range(2)]
    try:
        time.sleep(0.3)
        shared = statistics.median(sampler.core_loop_ms("1") for _ in range(5))
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    assert shared > 1.5 * alone, (alone, shared)   # a third of the core: about three times as long
    assert os.sched_getaffinity(0) == mine   # the harness's own affinity is back
    assert sampler.cpu_ids("0,2-3") == [0, 2, 3]


# ---- iobench serve -------------------------------------------------------------------------

def read_ready(proc: subprocess.Popen, timeout: float = 60.0) -> int | None:
    """The port from serve's READY line, or None if it exited first."""
    deadline = time.monotonic() + timeout
    buf = b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.5)
        if ready:
            chunk = os.read(proc.stdout.fileno(), 4096)
            if not chunk:
                return None
            buf += chunk
            m = re.search(rb"^READY port=(\d+)$", buf, re.M)
            if m:
                return int(m.group(1))
        elif proc.poll() is not None:
            return None
    raise AssertionError(f"no READY line within {timeout:g} s: {buf!r}")


# every IO model and baseline, and one RPC provider: test_rpc.py starts and stops every provider (and the consumer,
# which needs a provider to call) under the harness
SERVED = [s for s, server in manifest.SERVERS.items() if server.role == "model" or s == "rpc-tomcat"]


@pytest.mark.parametrize("server_id", SERVED + list(manifest.ECHO_SERVERS))
def test_serve_starts_a_server_by_id_and_ctrl_c_stops_all_of_it(server_id):
    proc = subprocess.Popen([str(IOBENCH), "serve", server_id, "--work-ms", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        port = read_ready(proc)
        if port is None:
            code = proc.wait(10)
            if code == EXIT_UNSUPPORTED:
                pytest.skip(f"{server_id}: not supported on this machine")
            raise AssertionError(f"serve {server_id} exited {code}: {proc.stderr.read().decode()[-800:]}")
        server = manifest.SERVERS.get(server_id)
        if server is not None and server.conforms:  # GET / with the book's body; an RPC provider's own route
            resp = http.get("127.0.0.1", port, server.route.path, timeout=5)
            assert (resp.status, resp.body) == (200, server.route.body)
        else:
            assert port_is_listening("127.0.0.1", port)
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C reaches the whole foreground group
        assert proc.wait(30) == 0, proc.stderr.read().decode()[-800:]
        assert b"stopped (exit 0)" in proc.stderr.read()
        assert not port_is_listening("127.0.0.1", port)
        assert process_group_pids(proc.pid) == []
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_serve_names_the_servers_it_knows_when_given_another():
    p = subprocess.run([str(IOBENCH), "serve", "c-nonesuch"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert p.stderr == "error: iobench serve: argument server: unknown server id 'c-nonesuch'; iobench list shows " \
                       "every id (see iobench serve --help)\n"


def test_raw_output_headers_name_no_path_of_this_machine():
    """A command line that names a file of the checkout (iom-openloop's --hist) is recorded
    relative to it, as meta.json's load_commands are: data/ is shared between machines."""
    from iobench.run.results import raw_text
    from iobench.servers.manifest import ROOT
    text = raw_text(["iom-openloop", "--hist", str(ROOT / "data" / "x.hist.csv"), "http://127.0.0.1:1/"], {},
                    "OUT", 0, "now")
    assert text.splitlines()[0] == "# command: iom-openloop --hist data/x.hist.csv http://127.0.0.1:1/"
    assert str(ROOT) not in text


# ---- what the reader watches: progress lines -------------------------------------------------------

def captured_rows(name: str) -> list[dict]:
    import pandas as pd
    from iobench.run.profiles import DATA
    csv = DATA / name / "results.csv"
    return pd.read_csv(csv).to_dict("records") if csv.exists() else []


@pytest.mark.parametrize("name", registry.names())
def test_progress_lines_say_missing_values_in_words(name):
    """Every row of every captured dataset (each kind of point its plan produces, pipelined ones
    with no per-request latency among them, failed runs too) and every point label of its plans'
    smoke and full profiles: the line the runner prints has no Python None, nan or repr in it.
    The rows come as the CSV gives them (NaN where a live row has None), and once more with every
    NaN turned into None, as a live row holds it."""
    ex = registry.experiment(name)
    bad = re.compile(r"\bNone\b|\bnan\b|<bound method|object at 0x", re.I)
    for profile in ("smoke", "full"):
        for point in ex.points(profile):
            assert not bad.search(point.label()), f"{name} {profile}: {point.label()!r}"
    rows = captured_rows(name)
    if not rows:
        pytest.skip(f"data/{name} has no results.csv")
    for row in rows:
        for shown in (row, {k: (None if v != v else v) for k, v in row.items()}):
            line = runner.progress_line(ex, "[1/1] label", shown)
            assert not bad.search(line), f"{name}: {line!r}\nfrom {row}"


def test_a_pipelined_point_says_why_it_has_no_p99():
    ex = registry.experiment("c-servers")
    row = next(r for r in captured_rows("c-servers") if r.get("pipeline", 1) > 1 and r["ok"])
    assert "p99 n/a (pipelined" in runner.progress_line(ex, "x", {**row, "p99_ms": None})


# ---- what the runner adds to every row -----------------------------------------------------

def _run_and_serving(tmp_path, columns, measured=None):
    from iobench.run.profiles import PROFILES
    from iobench.run.results import DatasetWriter

    class Srv:
        cpus = "0"
    writer = DatasetWriter(tmp_path / "ds", "run-1", columns)
    r = runner.Run(HttpExperiment(plans.PLANS["baselines"]), PROFILES["smoke"], writer, "run-1", (), "0", "1",
                   lambda m: None, measured=measured)
    return r, runner.Serving(runner.Turn(manifest.get("c-epoll"), []), 2, Srv())


def _measured(raw_file="raw/x.txt"):
    usage = sampler.Usage(wall_s=2.0, cpu_s=1.0, rss_kib_max=100, threads_max=1, procs_max=1, vcsw=0, ivcsw=0,
                          system_busy_s=1.5, user_s=0.6, sys_s=0.4)
    return runner.Measured("out", 0, raw_file, "2026-11-28T17:00:00+00:00", usage, 0.5, 25.0, False, 0.0, {})


def test_the_runner_adds_which_server_repeat_and_run_and_what_it_sampled_to_every_row(tmp_path):
    """A kind's measure returns what it measured; the row the runner writes has the server, the repeat, the
    run and what measure_load sampled too, as far as the kind's table has those columns."""
    columns = ["server", "model", "lang", "repeat", "rps", "server_cpu_s", "raw_file", "profile", "run_id",
               "server_cpus", "client_cpus", "outlier"]
    r, at = _run_and_serving(tmp_path, columns, _measured())
    row = r.row(at, {"rps": 10.0})
    assert row == {"server": "c-epoll", "model": manifest.get("c-epoll").model, "lang": "C", "repeat": 2,
                   "rps": 10.0, "server_cpu_s": 1.0, "raw_file": "raw/x.txt", "profile": "smoke",
                   "run_id": "run-1", "server_cpus": "0", "client_cpus": "1", "outlier": False}
    # a table without model, lang or outlier (the echo kind's) gets none of them; a point that ran no load
    # (an idle study's server that stopped answering) gets no sampled columns
    r, at = _run_and_serving(tmp_path / "b", ["server", "repeat", "ok", "server_cpu_s"])
    assert r.row(at, {"ok": False}) == {"server": "c-epoll", "repeat": 2, "ok": False}


def test_a_kind_that_returns_a_column_the_runner_adds_is_refused(tmp_path):
    r, at = _run_and_serving(tmp_path, ["server", "repeat", "rps", "raw_file"], _measured())
    with pytest.raises(ValueError, match="returned raw_file, repeat: the runner adds those to every row"):
        r.row(at, {"rps": 1.0, "repeat": 2, "raw_file": "raw/y.txt"})
