"""Bad input on the command line: one clear line, exit 2, nothing started, nothing written; and the book's data
never replaced by accident (a smoke run never writes into data/, a full run replaces a dataset only when asked
and says so before it measures). The data/ here is a temporary copy (profiles.DATA pointed at it)."""
from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import pytest

from iobench.__main__ import main
from iobench.kinds.http import plans
from iobench.run import profiles, runner
from iobench.run.lifecycle import StartError
from iobench.kinds.http.dataset import COLUMNS
from iobench.run.results import DatasetWriter
from iobench.servers import manifest
from iobench.servers.manifest import Server
from test_lifecycle import CODE, contract_server
from test_results import PLAN

BEYOND = str(max(os.sched_getaffinity(0)) + 1)  # a CPU this machine does not have (7 on the book's 2 cores)


@pytest.fixture
def book(tmp_path, monkeypatch):
    """A data/ of one captured dataset (c-servers, two files) and a scratch folder, both temporary; every
    process the harness would start fails the test."""
    data = tmp_path / "data"
    capture = DatasetWriter(data / "c-servers", "published-run", COLUMNS)
    capture.write_json("meta.json", {"run_id": "published-run", "profile": {"name": "full"}})
    capture.add_row({"server": "c-epoll", "rps": 1.0})
    capture.commit()
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "thesis.txt").write_text("not a dataset\n")
    (tmp_path / "a-file").write_text("a file\n")
    monkeypatch.setattr(profiles, "DATA", data)
    monkeypatch.setattr(profiles, "SCRATCH", tmp_path / "scratch")

    def no_process(*args, **kwargs):
        raise AssertionError(f"a process was started: {args[0] if args else kwargs}")
    monkeypatch.setattr(subprocess.Popen, "__init__", no_process)
    return tmp_path


def snapshot(root) -> dict:
    return {p: (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


# argv (with {data}, {tmp} and {beyond} filled in), and what the one error line says
MISTAKES = [
    ([], "required"),
    (["frobnicate"], "invalid choice"),
    (["run", "no-such-dataset"], "unknown dataset 'no-such-dataset'; known: "),
    (["run", "c-servers", "--servers", "no-such-server"],
     "'no-such-server' is not a server of c-servers; its servers: nginx"),
    (["run", "c-servers", "--servers", "c-epoll", "java-netty", "nope"],
     "'java-netty' and 'nope' are not servers of c-servers"),
    (["run", "c-servers", "--profile", "smoke", "--server-cpus", "{beyond}"], "not among this machine's usable CPUs"),
    (["run", "c-servers", "--client-cpus", "1-a"], "is not a CPU list"),
    (["run", "c-servers", "--client-cpus", "1-0"], "is not a CPU list"),
    (["run", "c-servers", "--profile", "fast"], "invalid choice: 'fast'"),
    (["run", "c-servers", "--profile", "smoke", "--servers", "c-epoll", "--no-battery", "--dest", "{data}/c-servers"],
     "a smoke run never writes there"),
    (["run", "c-servers", "--dest", "{data}"], "a smoke run never writes there"),
    (["run", "c-servers", "--dest", "{data}/new-folder"], "a smoke run never writes there"),
    (["run", "c-servers", "--profile", "full", "--dest", "{data}/c-servers"],
     "already holds captured data (run published-run, profile full, 1 row); pass --overwrite"),
    (["run", "c-servers", "--profile", "full"], "already holds captured data"),
    (["run", "c-servers", "--profile", "full", "--overwrite", "--dest", "{tmp}/notes"], "not a captured dataset"),
    (["run", "c-servers", "--dest", "{tmp}/notes"], "not a captured dataset"),
    (["run", "c-servers", "--dest", "{tmp}/a-file"], "is not a folder"),
    (["run", "c-servers", "--dest", "{tmp}/a-file/below"], "cannot create it"),
    (["serve", "no-such-server"], "unknown server id 'no-such-server'"),
    (["serve", "c-epoll", "--port", "70000"], "from 0 to 65535"),
    (["serve", "c-epoll", "--work-ms", "-5"], "from 0 to 60000, not '-5'"),
    (["serve", "c-epoll", "--work-ms", "nan"], "wants a number"),
    (["serve", "c-epoll", "--pool", "0"], "whole number from 1"),
    (["serve", "c-epoll", "--pool", "2.5"], "whole number"),
    (["serve", "c-epoll", "--host", "example.org"], "wants an IP address"),
    (["serve", "c-epoll", "--cpus", "{beyond}"], "not among this machine's usable CPUs"),
    (["serve", "c-epoll", "--db-cpus", "0"], "--db-cpus: c-epoll has no database"),
    (["serve", "c-db-epoll", "--db-cpus", "{beyond}"], "not among this machine's usable CPUs"),
    (["battery", "no-such"], "unknown server id 'no-such'"),
    (["battery", "netty-4.2.20"], "is an echo server"),
    (["battery", "c-epoll", "--cases", "nope"], "unknown case 'nope'; cases: http10_get"),
    (["battery", "c-epoll", "--server-cpus", "{beyond}"], "not among"),
    (["probe", "c-epoll", "--work-ms", "-5"], "from 0 to 60000, not '-5'"),
    (["probe", "c-epoll", "--clients", "0"], "from 1 to 1000"),
    (["probe", "no-such"], "unknown server id"),
    (["show", "no-such"], "unknown dataset 'no-such'"),
    (["show", "c-servers", "--path", "{tmp}/nowhere"], "no such folder"),
    (["obtain", "no-such"], "unknown dataset 'no-such'"),
]


@pytest.mark.parametrize("argv, says", MISTAKES, ids=[" ".join(a) or "(nothing)" for a, _ in MISTAKES])
def test_a_mistake_is_one_line_and_exit_2_with_nothing_started_or_written(book, capsys, argv, says):
    argv = [a.format(data=book / "data", tmp=book, beyond=BEYOND) for a in argv]
    before = snapshot(book)
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own checks end here
        code = exc.code
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert says in lines[0] and "Traceback" not in err and out == ""
    assert snapshot(book) == before


def test_a_profile_misnamed_in_the_environment_is_a_mistake_too(book, monkeypatch, capsys):
    monkeypatch.setenv("IOBENCH_PROFILE", "ful")
    assert main(["obtain", "c-servers"]) == 2
    assert capsys.readouterr().err == "error: IOBENCH_PROFILE='ful': expected one of replay, smoke, full\n"


def test_the_real_command_says_one_line_too(tmp_path):
    """The same in a process of its own, as a reader types it (the issue's case: a CPU this machine lacks)."""
    p = subprocess.run([str(CODE / "bin" / "iobench"), "run", "c-servers", "--profile", "smoke",
                        "--server-cpus", BEYOND, "--dest", str(tmp_path / "out")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.startswith("error: ") and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert not (tmp_path / "out").exists()


def refusing_server(tmp_path) -> Server:
    """A server that refuses its flags the way the book's servers do: its reason on stderr, exit 1."""
    script = tmp_path / "refuse.sh"
    script.write_text("#!/bin/sh\necho \"test-refuse: --work-ms wants a number from 0 to 60000, not '$2'\" >&2\n"
                      "echo \"usage: test-refuse [--work-ms MS]\" >&2\nexit 1\n")
    script.chmod(0o755)
    return Server(id="test-refuse", model="test", lang="C", summary="refuses",
                  argv=lambda o, w: [str(script), "--work-ms", "-1"])


def test_a_server_that_refuses_to_start_is_said_in_its_own_words(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(manifest.SERVERS, "test-refuse", refusing_server(tmp_path))
    assert main(["serve", "test-refuse"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: test-refuse refused to start: "
                   "test-refuse: --work-ms wants a number from 0 to 60000, not '-1'"]
    with pytest.raises(StartError, match="before READY"):  # --debug: the traceback, as it was
        main(["--debug", "serve", "test-refuse"])


def test_a_run_that_fails_says_what_failed_and_where_its_output_is(tmp_path, monkeypatch, capsys, no_waiting):
    monkeypatch.setitem(manifest.SERVERS, "test-ok", contract_server("ok"))
    monkeypatch.setitem(plans.PLANS, "tiny", PLAN)

    def broken(self, run, at, point):
        raise RuntimeError("the generator's output ended early")
    monkeypatch.setattr(type(runner_experiment()), "measure", broken)
    dest = tmp_path / "tiny"
    assert main(["run", "tiny", "--dest", str(dest), "--no-battery"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and not dest.exists()
    [failed] = (tmp_path / ".staging").glob("tiny-*.failed")
    assert f"partial output kept in {failed}" in err
    assert err.strip().splitlines()[-1].startswith(
        "error: iobench run failed: RuntimeError: the generator's output ended early")
    with pytest.raises(RuntimeError, match="ended early"):
        main(["run", "tiny", "--dest", str(dest), "--no-battery", "--debug"])


def runner_experiment():
    from iobench import registry
    return registry.experiment(PLAN, with_battery=False)


def test_a_full_run_says_what_it_replaces_before_it_measures(book, monkeypatch):
    """With --overwrite the published dataset is replaced only when the run finishes, and the run says so first;
    the first thing it does after saying so is its measuring (stubbed here: it fails, and data/ is as it was)."""
    said = []
    monkeypatch.setattr(runner.limits, "raise_nofile", lambda: (_ for _ in ()).throw(RuntimeError("stop here")))
    before = snapshot(book / "data")
    with pytest.raises(RuntimeError, match="stop here"):
        runner.run(runner_experiment(), "full", dest=book / "data" / "c-servers", overwrite=True, progress=said.append)
    assert said == [f"this run replaces {book / 'data' / 'c-servers'} (run published-run, profile full, 1 row) "
                    "once it finishes; until then it stays as it is"]
    assert snapshot(book / "data") == before


def test_a_smoke_run_replaces_its_own_earlier_scratch_capture(tmp_path, monkeypatch, no_waiting):
    monkeypatch.setitem(manifest.SERVERS, "test-ok", contract_server("ok"))
    from iobench import registry
    dest = tmp_path / "scratch" / "tiny"
    one_point = registry.experiment(dataclasses.replace(PLAN, points=PLAN.points[:1]), with_battery=False)
    run_ids = [runner.run(one_point, "smoke", dest=dest, progress=lambda m: None) == dest
               and (dest / "meta.json").read_text() for _ in range(2)]
    rows = (dest / "results.csv").read_text().splitlines()[1:]
    assert len(rows) == 1 and rows[0].rsplit(",", 2)[1] in run_ids[1] and run_ids[0] != run_ids[1]  # the last run's


def test_plan_only_refuses_a_member_it_does_not_measure_and_keeps_the_ones_it_does():
    from iobench import registry
    assert registry.get("c-servers").only(["c-epoll"]).servers == ("c-epoll",)
    clients = registry.get("http-clients")
    first = clients.members()[0]
    assert {p.client for p in clients.only([first]).points} == {first}
    with pytest.raises(KeyError, match="'nginx' is not a client of http-clients; its clients: "):
        clients.only(["nginx"])


def test_cpu_lists_are_parsed_and_checked_against_this_machine():
    assert runner.cpu_list("0-2,5") == [0, 1, 2, 5] and runner.cpu_count("1,3") == 2
    for bad in ("", "a", "1-", "-1", "3-1", "1,,2"):
        with pytest.raises(ValueError, match="not a CPU list"):
            runner.cpu_list(bad)
    runner.check_cpus(str(min(os.sched_getaffinity(0))))
    with pytest.raises(ValueError, match=f"CPU {BEYOND} is not among"):
        runner.check_cpus(f"0,{BEYOND}", "--server-cpus")


def test_the_data_guard_holds_for_a_folder_reached_through_a_link(book):
    link = book / "via-link"
    link.symlink_to(book / "data")
    with pytest.raises(Exception, match="a smoke run never writes there"):
        runner.run(runner_experiment(), "smoke", dest=link / "c-servers", progress=lambda m: None)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))


def test_the_command_line_starts_without_pandas_or_numpy():
    """Every `iobench battery` and `probe` a page runs paid a third of a second importing pandas and numpy, which
    neither reads: the command line, its parser and the registry behind it import them only when a table is read."""
    code = ("import sys; import iobench.__main__ as m; m.parser(); "  # a lazy module is a _LazyModule until used
            "print([n for n in ('pandas', 'numpy') "
            "if type(sys.modules.get(n)).__name__ not in ('_LazyModule', 'NoneType')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=CODE, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_a_lazy_module_is_the_module_once_used():
    from iobench.run.lazy import lazy
    code = ("from iobench.run.lazy import lazy; pd = lazy('pandas'); assert type(pd).__name__ == '_LazyModule'; "
            "frame = pd.DataFrame({'a': [1]}); import pandas; assert pandas is pd and pandas.DataFrame is type(frame); "
            "assert lazy('pandas') is pd; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=CODE, check=True)
    assert out.stdout.strip() == "ok", out.stderr
    assert lazy("os") is os
    with pytest.raises(ModuleNotFoundError):
        lazy("no_such_module_here")


def test_list_keeps_its_columns_aligned_for_the_longest_name(capsys):
    """Every id and dataset name, however long (java-db-tomcat-vt-21-pg425), leaves the next column where the others
    start it."""
    assert main(["list"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  ")]
    starts = {len(line) - len(line[2:].split(maxsplit=1)[1]) for line in rows}
    assert len(starts) == 1, sorted(starts)
