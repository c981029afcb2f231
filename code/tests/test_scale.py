"""Many connections: the harness raises file-descriptor limits before it starts anything and
records every limit a model can hit; an idle study holds idle connections beside a server,
tells them apart from the busy ones, and charges the server's memory per idle connection."""
import dataclasses
import json
import resource
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import reads_as_prose, reads_like_the_book

from iobench import registry
from iobench.book.pages import many_connections
from iobench.kinds.http import dataset
from iobench.kinds.http import plans
from iobench.load.idle import IDLE_BIN, parse_line
from iobench.run import limits, runner
from iobench.run.profiles import PROFILES
from iobench.servers import manifest
from iobench.servers.manifest import CODE


def _in_child(code: str, soft: int, hard: int) -> dict:
    """Run `code` in a fresh python whose NOFILE limit starts at (soft, hard); its JSON output."""
    def lower():
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         preexec_fn=lower, env={"PYTHONPATH": str(CODE)})
    return json.loads(out.stdout)


RAISE = "import json; from iobench.run import limits; print(json.dumps(limits.raise_nofile({})))"


@pytest.mark.skipif(resource.getrlimit(resource.RLIMIT_NOFILE)[1] < 4096, reason="needs a hard limit of 4096")
def test_a_stock_soft_limit_is_raised_at_least_to_the_hard_one():
    got = _in_child(RAISE.format(100_000), 1024, 4096)
    assert got["before"] == {"soft": 1024, "hard": 4096}
    after = got["after"]
    assert after["soft"] == after["hard"]
    # a process with CAP_SYS_RESOURCE (root, usually) raises the hard limit too, up to fs.nr_open;
    # without it (this machine's sandbox), as far as the hard limit goes
    assert after["soft"] >= 100_000 if after["hard"] > 4096 else after["soft"] == 4096


def test_a_limit_is_never_lowered():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    got = _in_child(RAISE.format(100), soft, hard)
    assert got["after"] == got["before"] == {"soft": soft, "hard": hard}


def test_the_limits_a_model_can_hit_are_all_recorded():
    snap = limits.snapshot()
    for name in ("kernel.pid_max", "kernel.threads-max", "vm.max_map_count", "net.core.somaxconn"):
        assert snap[name].isdigit(), name
    assert snap["nofile"]["soft"] > 0 and "nproc" in snap


def test_idle_lines_are_parsed_and_a_missing_one_is_none():
    text = 'noise\nIDLE {"connections": 3, "answered": 2}\nIDLE_END {"held": 3, "closed_by_server": 1}\n'
    assert parse_line("IDLE", text) == {"connections": 3, "answered": 2}
    assert parse_line("IDLE_END", text)["closed_by_server"] == 1
    assert parse_line("IDLE", "IDLE_END {}\n") is None


def test_the_idle_study_is_ordered_and_never_lets_a_server_drop_an_idle_connection():
    plan = plans.IDLE_CONNECTIONS
    assert plan.holds_idle and plan.idle_timeout_s == 0 and not plans.C_SERVERS.holds_idle
    assert [p.idle_conns for p in plan.points] == sorted(p.idle_conns for p in plan.points)
    assert plan.points[0].idle_conns == 0 and plan.points[-1].idle_conns == 100_000
    assert not set(plans.ONE_AT_A_TIME) & set(plan.servers)
    assert set(plan.smoke_servers) < set(plan.servers)


@pytest.fixture(scope="module")
def idle_run(tmp_path_factory):
    subprocess.run(["make", "-s", "-C", str(CODE / "c"), "all"], check=True)
    assert IDLE_BIN.exists()
    plan = dataclasses.replace(plans.IDLE_CONNECTIONS.only(("c-epoll", "c-thread")), dataset="tiny-idle",
                               smoke_points=tuple(plans.Point("wrk", 40, True, idle_conns=n) for n in (0, 1500)))
    said = []
    path = runner.run(registry.experiment(plan), "smoke", dest=tmp_path_factory.mktemp("idle") / "tiny-idle",
                      progress=said.append)
    return dataset.load(path, "smoke"), said


def test_idle_connections_are_held_beside_the_load_and_charged_per_connection(idle_run):
    ds, said = idle_run
    df = ds.df.set_index(["server", "idle_conns"])
    for server in ("c-epoll", "c-thread"):
        none, held = df.loc[(server, 0)], df.loc[(server, 1500)]
        assert none["ok"] and held["ok"], said
        # the busy connections are counted apart from the idle ones (their own address)
        assert none["conns_served"] == held["conns_served"] == 40
        assert none["idle_open"] == 0 and held["idle_open"] == 1500 and held["idle_answered"] == 1500
        assert pd_isnan(none["pss_per_idle_kib"]) and held["pss_per_idle_kib"] > 0
    # a thread per connection pays a stack per idle connection; an event loop, a small struct
    assert df.loc[("c-thread", 1500), "server_threads_max"] > 1500
    assert df.loc[("c-thread", 1500), "pss_per_idle_kib"] > df.loc[("c-epoll", 1500), "pss_per_idle_kib"]
    assert ds.summary()["pss_per_idle_kib"].notna().sum() == 2
    reads_like_the_book(ds, "idle-connections")
    reads_as_prose(many_connections.idle_connections(ds))  # the page's sentences, from a smoke capture
    from iobench.book.pages import java_results
    reads_as_prose(java_results.exercise_1(registry.obtain("java-servers", "replay"), ds))  # book/java/results


def test_every_holder_reports_and_stops_with_its_server(idle_run):
    ds, _ = idle_run
    holders = sorted(Path(ds.path, "raw").glob("*/idle-r1-*.txt"))
    assert [p.parent.name for p in holders] == ["c-epoll", "c-thread"]
    for p in holders:
        text = p.read_text()
        assert "# exit: 0" in text and parse_line("IDLE", text)["answered"] == 1500
        assert parse_line("IDLE_END", text) == {"held": 1500, "closed_by_server": 0}
    assert subprocess.run(["pgrep", "-f", str(IDLE_BIN)], capture_output=True).stdout == b""
    assert ds.meta["limits"]["nofile"]["soft"] >= 2000 and "vm.max_map_count" in ds.meta["limits"]


def pd_isnan(x) -> bool:
    return x != x


def test_a_model_that_stops_answering_idle_connections_is_not_measured_past_that_point(tmp_path, monkeypatch):
    # A pool of 64 threads, each held by an idle connection that never closes: the 65th
    # connection is never answered, nor are the busy ones; the next level is not run.
    plan = dataclasses.replace(plans.IDLE_CONNECTIONS.only(("c-threadpool",)), dataset="tiny-pool",
                               smoke_points=tuple(plans.Point("wrk", 40, True, idle_conns=n) for n in (0, 100, 200)))
    path = runner.run(registry.experiment(plan), "smoke", dest=tmp_path / "tiny-pool", progress=lambda m: None)
    df = dataset.load(path, "smoke").df.set_index("idle_conns")
    assert df.loc[0, "ok"] and df.loc[0, "conns_served"] == 40
    assert df.loc[100, "idle_answered"] == 64 and df.loc[100, "rps"] == 0
    assert not df.loc[200, "ok"]
    assert df.loc[200, "failure"].startswith("not measured: the server stopped answering at 100 idle connections")
    assert "36 unanswered" in df.loc[200, "failure"]


def test_the_scale_plan_runs_every_model_in_one_run_up_to_10000_connections():
    plan = registry.get("scale")
    assert set(plan.servers) == {"nginx", *manifest.ids("C"), *manifest.ids("Java")}
    assert max(p.connections for p in plan.points if p.keepalive) == 10_000
    assert {p.connections for p in plan.points if not p.keepalive} == {100, 1000}
    assert plans.PIPELINED in plan.points


def test_a_plan_may_measure_for_less_than_its_profile_never_more():
    from iobench.run.profiles import PROFILES
    plan = registry.get("scale")
    assert plan.timing(PROFILES["full"]) == (4.0, 1.0)
    assert plan.timing(PROFILES["smoke"]) == (1.0, 0.5)  # the smoke profile's shorter runs win
    ten_thousand = next(p for p in plan.points if p.connections == 10_000)
    assert plan.timing(PROFILES["full"], ten_thousand) == (10.0, 1.0)  # time for SYNs sent again to be answered
    assert plan.timing(PROFILES["smoke"], ten_thousand) == (1.0, 0.5)
    assert registry.get("c-servers").timing(PROFILES["full"]) == (10.0, 2.0)  # no override: the profile's


def test_a_smoke_run_measures_only_the_smoke_servers_and_a_full_one_every_server():
    def measured(ex, profile):  # the servers of the turns a run under this profile starts, in order
        run = SimpleNamespace(profile=PROFILES[profile])
        return list(dict.fromkeys(u.server.id for u in ex.turns(run, ex.points(profile), 1)))

    ex = registry.experiment("scale")
    assert measured(ex, "smoke") == ["nginx", "c-epoll", "c-thread", "java-netty"]
    assert measured(ex, "full") == list(registry.get("scale").servers)
    assert measured(ex, "smoke") == ["nginx", "c-epoll", "c-thread", "java-netty"]  # nothing kept from a run
    # a run of chosen servers is those servers, under every profile
    only = registry.experiment("scale", servers=("c-poll",))
    assert measured(only, "smoke") == measured(only, "full") == ["c-poll"]
