"""The throwaway PostgreSQL (iobench.run.postgres): made, filled, answered and always removed, whatever ends a run."""
import os
import pwd
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT
from iobench.run import postgres, procs
from iobench.run.postgres import DatabaseError, Postgres


def alive(pid: int) -> bool:
    """Running (a zombie is dead, only not yet reaped)."""
    try:
        return procs.stat_fields(pid)[0] != b"Z"
    except OSError:
        return False


def owner(pid: int) -> int | None:
    """The uid a process runs as, or None once it is gone (a backend of an earlier psql may be leaving)."""
    try:
        return os.stat(f"/proc/{pid}").st_uid if alive(pid) else None
    except OSError:
        return None


def gone_within(pids, seconds: float = 10.0) -> list[int]:
    """The pids still alive after waiting up to `seconds` for them to go."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = [p for p in pids if alive(p)]
        if not left:
            return []
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


def test_a_cluster_of_its_own_holds_techempower_s_tables_and_leaves_nothing():
    with Postgres(cpus="0") as db:
        folder, pids = db.folder, db.pids()
        assert str(folder).startswith("/tmp/" + postgres.PREFIX) and db.port != 5432  # never the system's cluster
        assert db.query("SELECT count(*), min(id), max(id), min(randomnumber) >= 1, max(randomnumber) <= 10000 "
                        "FROM world") == "10000|1|10000|t|t"
        assert db.query("SELECT count(*) FROM fortune") == "12"
        assert db.query("SELECT message FROM fortune WHERE id = 11").startswith("<script>")
        for setting in ("fsync", "synchronous_commit", "max_connections"):
            assert db.query(f"SHOW {setting}") == postgres.SETTINGS[setting]
        meta = db.metadata()
        assert meta["version"].startswith("postgres (PostgreSQL) ") and meta["cpus"] == "0"
        if os.geteuid() == 0:  # PostgreSQL refuses root: every process of it runs as the unprivileged user
            uid = pwd.getpwnam(meta["user"]).pw_uid
            assert meta["user"] != "root"
            assert {owner(p) for p in db.pids()} - {None} == {uid}
        assert len(pids) >= 3  # the postmaster and its helpers (checkpointer, writer, ...)
        if db.usage_s() is not None:
            assert db.usage_s() > 0
        # the same rows on loopback, as every server reaches it
        out = subprocess.run([str(db.bin / "psql"), "-X", "-At", "-d", db.dsn, "-c", "SELECT count(*) FROM world"],
                             capture_output=True, text=True)
        assert out.stdout.strip() == "10000", out.stderr
    assert not folder.exists()
    assert gone_within(pids) == []


def test_two_runs_hold_the_same_rows():
    sums = []
    for _ in range(2):
        with Postgres() as db:
            sums.append(db.query("SELECT sum(randomnumber), sum(id * randomnumber) FROM world"))
    assert sums[0] == sums[1]


def test_an_error_in_the_run_still_removes_it():
    with pytest.raises(ZeroDivisionError):
        with Postgres() as db:
            folder, pids = db.folder, db.pids()
            raise ZeroDivisionError
    assert not folder.exists() and gone_within(pids) == []


def test_a_setting_postgres_refuses_is_said_in_its_words_and_nothing_is_left():
    before = set(Path("/tmp").glob(postgres.PREFIX + "*"))
    with pytest.raises(DatabaseError, match="no_such_setting"):
        with Postgres(settings={"no_such_setting": "1"}):
            pass
    assert set(Path("/tmp").glob(postgres.PREFIX + "*")) <= before


def test_without_postgresql_installed_it_says_what_to_install(monkeypatch):
    monkeypatch.setattr(postgres, "Path", lambda p: Path("/nonexistent") / p.lstrip("/"))
    monkeypatch.setattr(postgres.shutil, "which", lambda name: None)
    with pytest.raises(DatabaseError, match="apt-get install postgresql-15"):
        postgres.bindir()


# Ctrl-C's KeyboardInterrupt as a harness in a terminal gets it: a command started in the background of a
# non-interactive shell (make test-platform's chroot, a CI step) inherits SIGINT ignored, and Python then never
# raises it.
HOLD = """
import signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
sys.path.insert(0, {code!r})
from iobench.run.postgres import Postgres
with Postgres() as db:
    print(db.folder, *db.pids(), flush=True)
    time.sleep(60)
"""


def _holder():
    proc = subprocess.Popen([sys.executable, "-c", HOLD.format(code=str(ROOT / "code"))], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline().split()
    assert line, proc.stderr.read()
    return proc, Path(line[0]), [int(p) for p in line[1:]]


def test_ctrl_c_leaves_no_process_and_no_folder():
    proc, folder, pids = _holder()
    proc.send_signal(signal.SIGINT)
    assert proc.wait(30) != 0
    assert gone_within(pids) == [] and not folder.exists()


def test_a_harness_killed_outright_takes_the_database_with_it_and_the_next_start_sweeps_its_folder():
    proc, folder, pids = _holder()
    proc.kill()
    proc.wait(10)
    assert gone_within(pids, 30) == []  # the postmaster dies with its parent, its backends with the postmaster
    assert folder.exists()  # nobody was left to remove it ...
    assert folder in postgres.sweep()  # ... until a later start sweeps what no postmaster runs in
    assert not folder.exists()
