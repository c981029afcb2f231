"""A server lost during a run is noticed and said: the point it died in fails with its cause, its later points are
not run against it (each says why), the next turn starts a server of its own, failed rows carry no NOISY or
GENERATOR-BOUND flag, the run ends with a summary of what failed and a non-zero exit, its output is kept apart, the
dataset is untouched, and nothing is left running."""
from __future__ import annotations

import csv
import dataclasses
import json
import os
import signal
from pathlib import Path

import pytest

from iobench.__main__ import main
from iobench.kinds.http import plans
from iobench.kinds.http.experiment import HttpExperiment
from iobench.run.lifecycle import ServerProcess
from iobench.run.procs import free_port
from iobench.servers import manifest
from test_lifecycle import assert_gone, contract_server, recorded_pgids, recorded_server

POINTS = (plans.Point("wrk", 2, True), plans.Point("wrk", 1, True))
PLAN = plans.HttpPlan(dataset="tiny", description="two servers, the first killed", servers=("test-ok", "test-ok2"),
                      points=POINTS, battery=True)


@pytest.fixture
def two_servers(monkeypatch, tmp_path, no_waiting):
    """Two contract servers on fixed ports, each start's process group recorded; the first is killed (SIGKILL)
    while its first point is measured."""
    ports = {"test-ok": free_port(), "test-ok2": free_port()}
    pgids = {sid: tmp_path / f"{sid}.pgid" for sid in ports}
    servers = dict(manifest.SERVERS)
    for sid, port in ports.items():
        servers[sid] = dataclasses.replace(recorded_server("ok", port, pgids[sid]), id=sid)
    monkeypatch.setattr(manifest, "SERVERS", servers)
    monkeypatch.setitem(plans.PLANS, "tiny", PLAN)
    measure = HttpExperiment.measure
    killed = []

    def measure_and_kill(self, run, at, point):
        if at.turn.server.id == "test-ok" and not killed:
            killed.append(at.srv.pid)
            os.kill(at.srv.pid, signal.SIGKILL)  # as if the kernel's OOM killer took it, mid-point
        return measure(self, run, at, point)
    monkeypatch.setattr(HttpExperiment, "measure", measure_and_kill)
    return ports, pgids, killed


def rows_of(folder) -> list[dict]:
    with open(folder / "results.csv") as f:
        return list(csv.DictReader(f))


def test_a_server_killed_mid_point_fails_that_point_and_its_later_ones_and_the_run(two_servers, tmp_path, capsys):
    ports, pgids, killed = two_servers
    dest = tmp_path / "tiny"
    assert main(["run", "tiny", "--dest", str(dest), "--no-battery"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert "Traceback" not in "\n".join(err)
    assert not dest.exists()  # the dataset untouched (here: never made)
    last = err[-1]
    assert last.startswith("error: 2 points not measured or cut short, at test-ok (repeat 1): test-ok died "
                           "(killed by SIGKILL) (and more: above); output kept in ")
    assert last.endswith(", the dataset untouched")
    kept = Path(last.split("output kept in ", 1)[1].split(", the dataset", 1)[0])
    assert kept.name.endswith(".failed") and kept.exists()
    rows = rows_of(kept)
    assert [(r["server"], r["tool"], r["ok"]) for r in rows] == [
        ("test-ok", "wrk", "False"), ("test-ok", "wrk", "False"),
        ("test-ok2", "wrk", "True"), ("test-ok2", "wrk", "True")]
    cause = "test-ok died (killed by SIGKILL)"
    assert rows[0]["failure"] == f"cut short: {cause} during this point"
    assert rows[1]["failure"] == f"not measured: {cause}"
    for row in rows[:2]:  # a failed run's CPU says nothing about the generator or the machine
        assert row["noisy"] in ("False", "") and row["generator_bound"] in ("False", "")
    assert not any("NOISY" in line or "GENERATOR-BOUND" in line for line in err if "FAILED" in line)
    meta = json.loads((kept / "meta.json").read_text())
    assert [(f["server"], f["why"]) for f in meta["faults"]] == [("test-ok", cause)] * 2
    # the summary at the end names each failed point with its cause
    summary = [line for line in err if line.startswith("failed: ")]
    assert len(summary) == 2 and all(line.startswith("failed: test-ok rep 1") and cause in line for line in summary)
    # nothing left running: both servers' process groups gone, their ports free
    for sid, port in ports.items():
        [pgid] = recorded_pgids(pgids[sid])
        assert_gone(pgid, port)


def test_lost_says_why_a_server_can_no_longer_be_measured():
    with ServerProcess(contract_server(), cpus=None, account_cpu=False) as srv:
        assert srv.lost() is None
        os.kill(srv.pid, signal.SIGTERM)  # the contract: exit 0 on SIGTERM
        srv.proc.wait(5)
        assert srv.lost() == "test-ok exited by itself (exit 0)"
