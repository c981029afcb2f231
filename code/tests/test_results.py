"""Captured data is written atomically and never overwritten unless asked; a failed run
leaves earlier data untouched; every CSV number can be re-derived from its raw output."""
import csv
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import reads_like_the_book

from iobench import registry
from iobench.kinds.http.dataset import load
from iobench.kinds.http import plans
from iobench.kinds.http.experiment import HttpExperiment
from iobench.load import drivers
from iobench.run import profiles, runner
from iobench.run.lifecycle import ServerError
from iobench.run.procs import free_port, port_is_listening
from iobench.kinds.http.dataset import COLUMNS
from iobench.run.results import DatasetExists, DatasetWriter, atomic_write
from iobench.servers import manifest
from test_lifecycle import CODE, HERE, assert_gone, contract_server, recorded_pgids, recorded_server


def test_atomic_write_replaces_whole_files(tmp_path):
    target = tmp_path / "f.txt"
    atomic_write(target, "old")
    atomic_write(target, "new")
    assert target.read_text() == "new"
    assert os.listdir(tmp_path) == ["f.txt"]  # no temporary file left behind


def test_atomic_write_failure_keeps_the_old_content(tmp_path, monkeypatch):
    target = tmp_path / "f.txt"
    atomic_write(target, "old")

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        atomic_write(target, "new")
    monkeypatch.undo()
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["f.txt"]


def test_writer_refuses_an_existing_dataset(tmp_path):
    dest = tmp_path / "data" / "ds"
    w = DatasetWriter(dest, "run1", COLUMNS)
    w.write_json("meta.json", {"run": 1})
    w.commit()
    with pytest.raises(DatasetExists, match="overwrite"):
        DatasetWriter(dest, "run2", COLUMNS)
    w2 = DatasetWriter(dest, "run2", COLUMNS, overwrite=True)
    w2.write_json("meta.json", {"run": 2})
    w2.commit()
    assert json.loads((dest / "meta.json").read_text()) == {"run": 2}
    assert sorted(p.name for p in (tmp_path / "data" / ".staging").iterdir()) == []


def test_writer_rejects_unknown_columns(tmp_path):
    w = DatasetWriter(tmp_path / "ds", "r", COLUMNS)
    with pytest.raises(KeyError, match="unknown result columns"):
        w.add_row({"server": "x", "speed": 1})


def test_abandoned_run_leaves_the_dataset_untouched(tmp_path):
    dest = tmp_path / "ds"
    w = DatasetWriter(dest, "run1", COLUMNS)
    w.write_json("meta.json", {"run": 1})
    w.commit()
    w2 = DatasetWriter(dest, "run2", COLUMNS, overwrite=True)
    w2.write_json("meta.json", {"run": 2})
    failed = w2.abandon("boom")
    assert json.loads((dest / "meta.json").read_text()) == {"run": 1}
    assert (failed / "FAILED.txt").read_text() == "boom\n"


@pytest.fixture
def test_servers(monkeypatch):
    servers = dict(manifest.SERVERS)
    for mode in ("ok", "wrong-body"):
        s = contract_server(mode)
        servers[s.id] = s
    monkeypatch.setattr(manifest, "SERVERS", servers)


PLAN = plans.HttpPlan(dataset="tiny", description="a test plan", servers=("test-ok",),
                      points=(plans.Point("wrk", 2, True), plans.Point("ab", 2, False)), battery=True)


def test_smoke_run_captures_rows_raw_output_metadata_and_battery(tmp_path, test_servers):
    dest = tmp_path / "tiny"
    path = runner.run(HttpExperiment(PLAN), "smoke", dest=dest, progress=lambda m: None)
    assert path == dest
    with open(dest / "results.csv") as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames == COLUMNS
        rows = list(reader)
    assert [(r["server"], r["tool"], r["mode"]) for r in rows] == [("test-ok", "wrk", "keepalive"),
                                                                    ("test-ok", "ab", "close")]
    for row in rows:
        assert row["ok"] == "True" and float(row["rps"]) > 0 and row["profile"] == "smoke"
        assert float(row["server_cpu_us_per_req"]) > 0 and float(row["client_cpu_pct"]) > 0
        # the CSV numbers are exactly what the raw output says
        raw = (dest / row["raw_file"]).read_text()
        code = int(raw.split("# exit: ")[1].split("\n")[0])
        parsed = drivers.get(row["tool"]).parse(raw.split("\n", 3)[3], code)
        assert int(row["requests"]) == parsed.requests
        assert float(row["rps"]) == pytest.approx(parsed.rps, rel=1e-5)
        assert (dest / row["raw_file"].replace(".txt", ".warmup.txt")).exists()
    meta = json.loads((dest / "meta.json").read_text())
    for key in ("schema_version", "machine", "versions", "git", "pinning", "started_at", "finished_at", "run_id"):
        assert key in meta
    assert meta["pinning"] == {"server_cpus": "0", "client_cpus": "1"}
    assert meta["stops"][0]["exit_code"] == 0
    # every measured run's generator command is in the metadata, the same as in its raw file
    assert [c["raw_file"] for c in meta["load_commands"]] == [r["raw_file"] for r in rows]
    for c in meta["load_commands"]:
        assert (dest / c["raw_file"]).read_text().split("\n")[0].endswith(" ".join(c["argv"]))
        assert c["argv"][:3] == ["taskset", "-c", "1"] and c["argv"][3] in ("wrk", "ab")
    battery = json.loads((dest / "battery.json").read_text())
    assert {v["case"] for v in battery["test-ok"]} >= {"keepalive_100", "pipelined_10", "concurrent_500"}
    ds = load(dest)
    assert ds.summary()["repeats"].tolist() == [1, 1]
    reads_like_the_book(ds, "baselines")
    from conftest import reads_as_prose
    from iobench.book.pages import measuring
    reads_as_prose(measuring.values(ds))  # book/method/measuring's sentences from a smoke capture


def test_failed_full_run_leaves_captured_data_untouched_and_no_server(tmp_path, test_servers, monkeypatch):
    # the full profile's own rules (it writes into the dataset, refuses to overwrite it), without its
    # minutes of waiting for a quiet machine and for TIME_WAIT sockets to drain
    full = profiles.PROFILES["full"]
    monkeypatch.setitem(profiles.PROFILES, "full", dataclasses.replace(full, quiet_wait_s=0.5, time_wait_max_s=1.0))
    dest = tmp_path / "tiny"
    runner.run(HttpExperiment(PLAN, with_battery=False), "smoke", dest=dest, progress=lambda m: None)
    before = {p: p.read_bytes() for p in dest.rglob("*") if p.is_file()}
    port, pgids = free_port(), tmp_path / "pgids"
    manifest.SERVERS["test-wrong-body"] = recorded_server("wrong-body", port, pgids)
    bad = plans.HttpPlan(dataset="tiny", description="fails verification", servers=("test-wrong-body",),
                         points=PLAN.points)
    with pytest.raises(ServerError, match="expected 200"):
        runner.run(HttpExperiment(bad), "full", dest=dest, overwrite=True, progress=lambda m: None)
    after = {p: p.read_bytes() for p in dest.rglob("*") if p.is_file()}
    assert after == before
    [pgid] = recorded_pgids(pgids)  # the one server the failed run started is gone
    assert_gone(pgid, port)
    with pytest.raises(DatasetExists):
        runner.run(HttpExperiment(PLAN), "full", dest=dest, progress=lambda m: None)


# The command line (`iobench run`) in a process of its own, measuring a one-server plan whose
# server records its process group and listens on a fixed port. When main() has returned, and
# before this process exits (its exit alone would kill the server: PR_SET_PDEATHSIG), it
# reports what is left of the server.
CLI_RUN = """
import sys
sys.path.insert(0, {code!r}); sys.path.insert(0, {tests!r})
from pathlib import Path
from iobench.__main__ import main
from iobench.kinds.http import plans
from iobench.run.procs import port_is_listening, process_group_pids
from iobench.servers import manifest
from test_lifecycle import recorded_pgids, recorded_server
from test_results import PLAN
manifest.SERVERS["test-ok"] = recorded_server("ok", {port}, Path({pgids!r}))
plans.PLANS["tiny"] = PLAN
code = main(["run", "tiny", "--profile", "smoke", "--dest", {dest!r}, "--no-battery"])
left = [pid for pgid in recorded_pgids(Path({pgids!r})) for pid in process_group_pids(pgid)]
print("left:", left, "listening:", port_is_listening("127.0.0.1", {port}), flush=True)
sys.exit(code)
"""


def test_ctrl_c_during_a_run_stops_the_server_and_keeps_the_data(tmp_path):
    """SIGINT while the server is up: the command exits 130, the server's process group is
    gone, its port is free, and the dataset already captured at --dest is byte for byte the same."""
    dest = tmp_path / "data" / "tiny"
    w = DatasetWriter(dest, "earlier-run", COLUMNS)
    w.write_json("meta.json", {"run_id": "earlier-run"})
    w.write_raw("test-ok/wrk.txt", "captured earlier\n")
    w.commit()
    before = {p: p.read_bytes() for p in dest.rglob("*") if p.is_file()}
    port, pgids = free_port(), tmp_path / "pgids"
    cli = subprocess.Popen([sys.executable, "-c", CLI_RUN.format(code=str(CODE), tests=str(HERE), port=port,
                                                                  pgids=str(pgids), dest=str(dest))],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # Interrupt while it measures: the warm-up's raw output is in the staging folder, and
        # the measured run (at least 1.5 s of waiting for quiet and of wrk) has begun.
        deadline = time.monotonic() + 30
        while not list((dest.parent / ".staging").glob("tiny-*/raw/test-ok/*.warmup.txt")):
            assert cli.poll() is None, f"the run ended before it was interrupted: {cli.communicate()}"
            assert time.monotonic() < deadline, "no warm-up within 30 s"
            time.sleep(0.02)
        assert recorded_pgids(pgids) and port_is_listening("127.0.0.1", port)
        cli.send_signal(signal.SIGINT)
        out, err = cli.communicate(timeout=30)
    finally:
        if cli.poll() is None:  # only if the test itself failed: leave nothing behind
            cli.kill()
            cli.wait()
    assert cli.returncode == 130, err
    assert "interrupted: servers stopped" in err
    assert out == "left: [] listening: False\n"  # stopped by the command itself, not by its exit
    [pgid] = recorded_pgids(pgids)
    assert_gone(pgid, port)
    after = {p: p.read_bytes() for p in dest.rglob("*") if p.is_file()}
    assert after == before
    [failed] = (dest.parent / ".staging").glob("tiny-*.failed")  # the partial run, kept aside
    assert "KeyboardInterrupt" in (failed / "FAILED.txt").read_text()


def test_generator_cores_come_from_the_taskset_list():
    from iobench.run.runner import cpu_count
    assert cpu_count("1") == 1
    assert cpu_count("0-1") == 2
    assert cpu_count("1,3-5") == 4
    assert cpu_count(None) >= 1


def test_the_data_status_names_every_dataset_with_its_run_and_its_readers(tmp_path):
    from iobench.data import dataset

    def capture(name, columns, rows, dirty=False):
        folder = tmp_path / "data" / name
        folder.mkdir(parents=True)
        (folder / "results.csv").write_text("\n".join([",".join(columns)] + [",".join(r) for r in rows]) + "\n")
        (folder / "meta.json").write_text(json.dumps({
            "started_at": "2026-11-24T11:38:11+00:00", "finished_at": "2026-11-24T12:29:11+00:00",
            "profile": {"name": "full", "repeats": 3}, "git": {"commit": "56ea4810abcdef", "dirty": dirty},
            "machine": {"cores": 2, "cpu_model": "AMD EPYC", "kernel": "Linux 6.18"}}))

    capture("web", ["server", "ok", "noisy", "outlier"],
            [("a", "True", "False", "False"), ("b", "False", "False", "False"), ("c", "True", "True", "True")])
    # a clients dataset: `ok` counts answers there, `ok_run` says whether the run worked
    capture("clients", ["client", "ok", "ok_run", "noisy"], [("jdk", "0", "True", "False")], dirty=True)
    (tmp_path / "book" / "part").mkdir(parents=True)
    (tmp_path / "book" / "part" / "page.md").write_text('hc = registry.obtain("clients")\nx = registry.obtain("web")\n')
    got = dataset.status(tmp_path / "data", tmp_path / "book").set_index("dataset")
    assert list(got.index) == ["clients", "web"]
    assert got.loc["web", "rows"] == 3 and got.loc["web", "flagged"] == 2      # a failed run, a noisy outlier
    assert got.loc["clients", "flagged"] == 0 and not got.loc["clients", "clean_tree"] and got.loc["web", "clean_tree"]
    assert got.loc["web", "measured"] == "2026-11-24 11:38 UTC" and got.loc["web", "minutes"] == 51
    assert got.loc["web", "commit"] == "56ea481" and got.loc["web", "read_by"] == "part/page"
    assert got.loc["web", "machine"] == "2 cores, AMD EPYC, Linux 6.18"


def test_every_published_dataset_is_a_full_run_from_a_clean_tree_and_read_by_a_chapter():
    from iobench.data import dataset

    got = dataset.status().set_index("dataset")
    published = sorted(p.parent.name for p in profiles.DATA.glob("*/meta.json"))
    assert sorted(got.index) == published and published
    assert (got.profile == "full").all() and got.clean_tree.all(), got[["profile", "clean_tree"]]
    assert got.read_by.str.len().gt(0).all(), got.read_by


def test_every_published_rpc_open_loop_and_client_row_carries_the_memory_of_what_it_measured():
    """Issue 36: the chapters that set JVMs beside each other read each one's PSS, so every row of a published
    dataset of these kinds carries `pss_kib` (rpc-provider lacked it until its capture of 2026-11-28). The
    one exception is the clients' reference, the book's C generator: its own memory is not a subject."""
    import pandas as pd

    from iobench.kinds.clients.plans import REFERENCE

    checked = []
    for meta in sorted(profiles.DATA.glob("*/meta.json")):
        name = meta.parent.name
        if name not in registry.every() or registry.kind_of(registry.get(name)).name not in {"rpc", "openloop",
                                                                                           "clients"}:
            continue
        df = pd.read_csv(meta.parent / "results.csv")
        subject = df[df.client != REFERENCE] if "client" in df else df
        assert "pss_kib" in df and subject.pss_kib.gt(0).all(), name
        checked.append(name)
    assert {"rpc-provider", "rpc-tail", "open-loop", "http-clients", "client-burst"} <= set(checked), checked


def test_what_a_run_keeps_of_a_server_s_stderr_names_no_path_of_this_machine():
    # a JVM's warning quoted a jar under the checkout into data/rpc-provider/meta.json (stderr_tail)
    from iobench.run import metadata
    from iobench.servers.manifest import ROOT
    line = f"called by X (file:{ROOT}/code/java/rpc/target/lib/a.jar)"
    assert metadata.portable_text(line) == "called by X (file:code/java/rpc/target/lib/a.jar)"
    assert metadata.portable([f"{ROOT}/code/c/build/iom-openloop", "-c", "1"]) == [
        "code/c/build/iom-openloop", "-c", "1"]


def test_slow_names_the_runs_measured_while_the_machine_ran_slow():
    """The rpc-provider run of 2026-11-25: some repeats at half speed. With the speed loop recorded, the
    dataset names them; a dataset from before the loop existed names none rather than guessing."""
    import pandas as pd

    from pathlib import Path

    from iobench.data.dataset import Dataset

    df = pd.DataFrame({"server": ["a", "a", "b", "b"], "repeat": [1, 2, 1, 2],
                       "loop_ms_before": [20.0, 21.0, 19.5, 41.0], "loop_ms_after": [20.5, 40.0, 20.0, 40.5]})
    ds = Dataset("x", Path("."), df, {}, {}, "replay")
    assert ds.slow()[["server", "repeat"]].values.tolist() == [["a", 2], ["b", 2]]
    assert ds.slow(factor=2.5).empty
    old = Dataset("x", Path("."), df.drop(columns=["loop_ms_before", "loop_ms_after"]), {}, {}, "replay")
    assert old.slow().empty


def test_loop_ms_is_the_hosts_speed_over_the_whole_capture():
    """One number per capture, to set two captures' hosts side by side: the median of every timing of the
    speed loop, before and after each run; a capture from before the loop existed has none."""
    import math
    from pathlib import Path

    import pandas as pd

    from iobench.data.dataset import Dataset

    df = pd.DataFrame({"loop_ms_before": [10.0, 11.0, 30.0], "loop_ms_after": [12.0, 9.0, 10.5]})
    assert Dataset("x", Path("."), df, {}, {}, "replay").loop_ms() == 10.75
    assert math.isnan(Dataset("x", Path("."), df.drop(columns=["loop_ms_before", "loop_ms_after"]), {}, {},
                              "replay").loop_ms())


def test_reads_like_the_book_fails_on_a_summary_that_lost_a_column(monkeypatch):
    """The check the smoke captures go through fails where a page's input would break: a column of
    the book's summary gone from the capture's, or the capture read as another kind."""
    from iobench.kinds.echo import dataset as echo
    smoke = registry.obtain("baselines", "replay")
    smoke.meta = {**smoke.meta, "profile": {**smoke.meta["profile"], "name": "smoke"}}
    whole = smoke.summary()
    monkeypatch.setattr(smoke, "summary", lambda: whole.drop(columns=["rps"]))  # this one only, not the book's
    with pytest.raises(AssertionError, match="lacks .*rps"):
        reads_like_the_book(smoke, "baselines")
    with pytest.raises(AssertionError, match="read as"):
        reads_like_the_book(echo.load(profiles.DATA / "echo-sweep"), "baselines")


@pytest.mark.parametrize("name", sorted(p.parent.name for p in profiles.DATA.glob("*/meta.json")))
def test_show_prints_every_captured_dataset_with_its_kind_s_columns(name, capsys):
    """`iobench show NAME` for every dataset in data/: its origin, then one line per point of the columns its kind
    shows (an RPC or clients dataset once asked for the open-loop or HTTP kind's columns, and show crashed)."""
    from iobench.__main__ import main
    assert main(["show", name]) == 0
    out = capsys.readouterr().out.splitlines()
    ds = registry.obtain(name, "replay")
    assert out[0].startswith(f"Dataset '{name}': replayed from data/")
    header = next(line for line in out if line.split()[:2] == list(ds.summarised.shown[:2]))
    assert header.split() == list(ds.summarised.shown)
    assert len(out) - out.index(header) - 1 == len(ds.summary())


def test_a_summary_is_its_kind_s_schema_over_the_repeats_that_count():
    """The one generic summary: rows that do not count are left out, the rest grouped by the kind's keys, each
    column its aggregation, a spread as median, min and max, and before/after add columns."""
    import pandas as pd
    from iobench.data.dataset import Summary, spread
    df = pd.DataFrame({"server": ["a", "a", "a", "b"], "size": [1, 1, 1, 2], "tps": [10.0, 30.0, 99.0, 5.0],
                       "ok": [True, True, False, True], "repeat": [1, 2, 3, 1]})
    s = Summary(keys=("server", "size"), columns={"repeats": ("repeat", "count"), **spread("tps"),
                                                  "double": ("twice", "median")},
                shown=("server", "tps"), before=lambda d: d.assign(twice=2 * d["tps"]),
                after=lambda a: a.assign(big=a["tps"] > 10))
    got = s.of(df).set_index("server")
    assert got.loc["a"].tolist() == [1, 2, 20.0, 10.0, 30.0, 40.0, True]   # the failed repeat (99) is not counted
    assert got.loc["b"].tolist() == [2, 1, 5.0, 5.0, 5.0, 10.0, False]


def test_the_marginal_cost_is_the_slope_between_successive_levels_in_each_repeat():
    """Memory per idle connection as what one more costs: within one repeat (one process), the change between
    two successive levels over the change in connections held; a level a repeat did not reach makes no segment,
    a failed run none either; then the median and range over the repeats."""
    import pandas as pd
    from iobench.kinds.http.dataset import HttpDataset
    rows = []
    for repeat, (base, grown) in enumerate([(100.0, 50.0), (120.0, 70.0), (110.0, 60.0)], start=1):
        # a JVM-like server: the first thousand cost `grown` KiB each (the heap grows), later ones 10 KiB
        for level, held in ((0, 0), (1000, 1000), (10000, 9000 if repeat == 3 else 10000)):
            pss = base + grown * min(held, 1000) + 10.0 * max(held - 1000, 0)
            rows.append({"server": "jvm", "repeat": repeat, "idle_conns": level, "idle_open": held,
                         "pss_rest_kib": pss, "ok": True})
    rows.append({"server": "jvm", "repeat": 4, "idle_conns": 0, "idle_open": 0, "pss_rest_kib": 1.0, "ok": True})
    rows.append({"server": "jvm", "repeat": 4, "idle_conns": 1000, "idle_open": 1000, "pss_rest_kib": 9e9,
                 "ok": False})
    ds = HttpDataset("t", None, pd.DataFrame(rows), {}, {}, "replay")
    m = ds.marginal().set_index(["from", "to"])
    assert m.loc[(0, 1000)][["repeats", "slope", "slope_min", "slope_max"]].tolist() == [3, 60.0, 50.0, 70.0]
    assert m.loc[(1000, 10000)][["repeats", "slope", "slope_min", "slope_max"]].tolist() == [3, 10.0, 10.0, 10.0]
    assert ds.marginal_value("jvm") == 10.0 and ds.marginal_value("jvm", to=1000) == 60.0
    total_over_n = ds.df[ds.df.idle_conns == 1000].pss_rest_kib.median() / 1000  # what the book quoted before
    assert total_over_n > 5 * ds.marginal_value("jvm")
