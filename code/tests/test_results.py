"""Captured data is written atomically and never overwritten unless asked; a failed run
leaves earlier data untouched; every CSV number can be re-derived from its raw output."""
import csv
import json
import os

import pytest

from iobench import drivers, manifest, plans
from iobench.bench import run_plan
from iobench.dataset import load
from iobench.lifecycle import ServerError
from iobench.results import COLUMNS, DatasetExists, DatasetWriter, atomic_write
from test_lifecycle import contract_server


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
    w = DatasetWriter(dest, "run1")
    w.write_json("meta.json", {"run": 1})
    w.commit()
    with pytest.raises(DatasetExists, match="overwrite"):
        DatasetWriter(dest, "run2")
    w2 = DatasetWriter(dest, "run2", overwrite=True)
    w2.write_json("meta.json", {"run": 2})
    w2.commit()
    assert json.loads((dest / "meta.json").read_text()) == {"run": 2}
    assert sorted(p.name for p in (tmp_path / "data" / ".staging").iterdir()) == []


def test_writer_rejects_unknown_columns(tmp_path):
    w = DatasetWriter(tmp_path / "ds", "r")
    with pytest.raises(KeyError, match="unknown result columns"):
        w.add_row({"server": "x", "speed": 1})


def test_abandoned_run_leaves_the_dataset_untouched(tmp_path):
    dest = tmp_path / "ds"
    w = DatasetWriter(dest, "run1")
    w.write_json("meta.json", {"run": 1})
    w.commit()
    w2 = DatasetWriter(dest, "run2", overwrite=True)
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


PLAN = plans.Plan("tiny", "a test plan", ("test-ok",),
                  points=(plans.Point("wrk", 2, True), plans.Point("ab", 2, False)), battery=True)


def test_smoke_run_captures_rows_raw_output_metadata_and_battery(tmp_path, test_servers):
    dest = tmp_path / "tiny"
    path = run_plan(PLAN, "smoke", dest=dest, progress=lambda m: None)
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
    battery = json.loads((dest / "battery.json").read_text())
    assert {v["case"] for v in battery["test-ok"]} >= {"keepalive_100", "pipelined_10", "concurrent_500"}
    ds = load(dest)
    assert ds.summary()["repeats"].tolist() == [1, 1]
    assert "smoke profile" in ds.caption()


def test_failed_full_run_leaves_captured_data_untouched(tmp_path, test_servers):
    dest = tmp_path / "tiny"
    run_plan(PLAN, "smoke", dest=dest, progress=lambda m: None, with_battery=False)
    before = {p: p.read_bytes() for p in dest.rglob("*") if p.is_file()}
    bad = plans.Plan("tiny", "fails verification", ("test-wrong-body",), points=PLAN.points)
    with pytest.raises(ServerError, match="expected 200"):
        run_plan(bad, "full", dest=dest, overwrite=True, progress=lambda m: None)
    after = {p: p.read_bytes() for p in dest.rglob("*") if p.is_file()}
    assert after == before
    with pytest.raises(DatasetExists):
        run_plan(PLAN, "full", dest=dest, progress=lambda m: None)


def test_generator_cores_come_from_the_taskset_list():
    from iobench.bench import cpu_count
    assert cpu_count("1") == 1
    assert cpu_count("0-1") == 2
    assert cpu_count("1,3-5") == 4
    assert cpu_count(None) >= 1
