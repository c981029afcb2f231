"""A load generator on another machine (run/hosts.py), without a second machine: the destination's syntax, the
other side's half run here as SSH would run it (paths into the harness's checkout made its own, files sent back,
its CPU counted, killed when the connection goes), and a run refused, before anything starts, where it cannot put
its load elsewhere. Across two network namespaces over SSH: test_hosts_live.py (make test-live)."""
from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time

import pytest

from iobench.__main__ import main
from iobench.run import hosts
from iobench.run.hosts import Host, split_report
from iobench.servers.manifest import ROOT
from test_lifecycle import CODE


@pytest.mark.parametrize("text, dest, root", [
    (None, None, str(ROOT)), ("local", None, str(ROOT)),
    ("laptop", "laptop", str(ROOT)), ("alice@10.0.0.2", "alice@10.0.0.2", str(ROOT)),
    ("alice@laptop:/home/alice/iom/", "alice@laptop", "/home/alice/iom")])
def test_a_destination_is_user_host_and_the_checkout_s_path(text, dest, root):
    h = Host.parse(text)
    assert (h.dest, h.root) == (dest, root)


@pytest.mark.parametrize("text, said", [("a b", "not an SSH destination"), ("-oProxyCommand=x", "not an SSH"),
                                        ("-Jhost", "not an SSH"), ("user@-Jhost", "not an SSH"),
                                        ("host:relative/path", "must be absolute")])
def test_a_destination_that_is_not_one_is_refused(text, said):
    with pytest.raises(ValueError, match=said):
        Host.parse(text)


def test_the_ssh_command_shares_one_connection_never_prompts_and_gives_up_on_a_silent_one(monkeypatch):
    monkeypatch.setenv("IOBENCH_SSH_CONFIG", "/tmp/cfg")
    h = Host.parse("alice@laptop:/srv/iom dir")
    argv = h.ssh(["wrk", "-c", "1", "http://10.0.0.1:80/a b"])
    try:
        assert argv[:3] == ["ssh", "-F", "/tmp/cfg"]
        for option in ("BatchMode=yes", "ControlMaster=auto", "ServerAliveInterval=2", "ConnectTimeout=10"):
            assert option in argv
        assert argv[-3:] == ["alice@laptop", "--", "cd '/srv/iom dir' && exec wrk -c 1 'http://10.0.0.1:80/a b'"]
    finally:
        h.close()


def test_a_report_is_split_from_the_output_and_its_absence_is_said():
    out, report = split_report("Requests/sec: 10\n" + hosts.MARK + '{"code": 0, "cpu_s": 1.5}\n')
    assert out == "Requests/sec: 10" and report == {"code": 0, "cpu_s": 1.5}
    assert split_report("ssh: connect to host x port 22: Connection refused\n") == (
        "ssh: connect to host x port 22: Connection refused\n", None)


def other_side(payload: dict) -> subprocess.Popen:
    """The other side's half, started as SSH starts it there (its stdin the connection)."""
    encoded = base64.b64encode(json.dumps(payload).encode()).decode()
    return subprocess.Popen([sys.executable, "-m", "iobench.run.hosts", "exec", encoded], cwd=ROOT,
                            env={"PYTHONPATH": str(CODE), "PATH": "/usr/bin:/bin"}, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_the_other_side_runs_the_command_in_its_checkout_and_sends_back_its_files_and_counts(tmp_path):
    staging = tmp_path / "staging"  # the harness's folder for the run: the generator writes into it, over there
    script = ("import os, sys; open(sys.argv[1], 'w').write(os.environ['WHO'] + ' ' + os.getcwd()); "
              "sum(range(3_000_000)); print('done')")
    payload = {"argv": ["taskset", "-c", "0", sys.executable, "-c", script, f"{staging}/raw/x.hist.csv"],
               "env": {"WHO": "generator"}, "root": "/somewhere/else/iom", "outputs": str(staging)}
    p = other_side(payload)
    out = p.stdout.read()  # its stdin open all along, as SSH keeps it
    p.stdin.close()
    p.wait(10)
    text, report = split_report(out)
    assert text.strip() == "done" and report["code"] == 0
    assert report["cpu_s"] > 0 and report["wall_s"] > 0 and report["steal_s"] is not None  # pinned: its cores'
    [(name, data)] = report["files"].items()
    assert name == "raw/x.hist.csv"
    import gzip
    assert gzip.decompress(base64.b64decode(data)).decode() == f"generator {ROOT}"


def test_the_other_side_kills_its_command_when_the_connection_goes(tmp_path):
    marker = tmp_path / "started"
    payload = {"argv": [sys.executable, "-c", f"import time; open({str(marker)!r}, 'w'); time.sleep(60)"],
               "env": {}, "root": str(ROOT), "outputs": None}
    p = other_side(payload)
    deadline = time.monotonic() + 20
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    t0 = time.monotonic()
    p.stdin.close()  # the SSH connection gone
    out = p.stdout.read()
    p.wait(10)
    assert time.monotonic() - t0 < 10
    _, report = split_report(out)
    assert report["code"] == -9
    assert subprocess.run(["pgrep", "-f", str(marker)], capture_output=True).stdout == b""


def test_a_host_that_cannot_be_reached_fails_the_command_with_what_ssh_said(tmp_path):
    cfg = tmp_path / "ssh_config"
    cfg.write_text("Host nowhere\n  HostName 127.0.0.1\n  Port 1\n  ConnectTimeout 3\n")
    h = Host(dest="nowhere", config=str(cfg))
    try:
        ran = h.run(["wrk", "http://127.0.0.1:1/"], {}, 30, outputs=tmp_path)
    finally:
        h.close()
    assert ran.code == 255 and ran.lost.startswith("the SSH connection to nowhere failed or dropped (ssh exit 255: ")
    assert "Connection refused" in ran.lost
    with pytest.raises(hosts.HostError, match="not reachable over SSH"):
        h.check(["wrk"], "1")
    h.close()


@pytest.mark.parametrize("argv, said", [
    (["run", "c-servers", "--client-host", "a b"], "not an SSH destination"),
    (["run", "idle-connections", "--client-host", "laptop"],
     "idle-connections cannot put its load on another machine: it holds its idle connections from this machine"),
    (["run", "delay-link", "--server-host", "server"],
     "delay-link cannot put its load on another machine: it measures behind a delay link it makes on this machine"),
    (["run", "echo-sweep", "--client-host", "laptop"], "cannot put its load on another machine: it checks"),
])
def test_a_run_that_cannot_go_across_machines_is_refused_before_anything_starts(argv, said, capsys, tmp_path):
    try:
        code = main(argv + ["--dest", str(tmp_path / "x")])
    except SystemExit as exc:  # argparse's own refusal
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) <= 2 and said in err[-1]
    assert not (tmp_path / "x").exists()


def test_the_agent_runs_what_a_harness_on_the_server_s_machine_sends_and_only_with_its_token(tmp_path):
    """--server-host: the harness there reaches this machine's Agent through a forwarded port (here: directly)."""
    import socket as socketlib
    with hosts.Agent([sys.executable]) as agent:
        there = Host(agent=(agent.port, agent.token))
        staging = tmp_path / "staging"
        script = "import sys; open(sys.argv[1], 'w').write('kept'); print('ran')"
        ran = there.run([sys.executable, "-c", script, f"{staging}/raw/a.csv"], {}, 60, outputs=staging)
        assert (ran.code, ran.output.strip(), ran.lost) == (0, "ran", None)
        assert (staging / "raw" / "a.csv").read_text() == "kept" and ran.cpu_s > 0
        # a file written under the run's folder for the command (an RPC call's bytes) is there for it to read
        (staging / "raw" / "requests").mkdir(parents=True)
        (staging / "raw" / "requests" / "call.bin").write_bytes(b"findById")
        reads = there.run([sys.executable, "-c", "import sys; print(open(sys.argv[1], 'rb').read().decode())",
                           f"{staging}/raw/requests/call.bin"], {}, 60, outputs=staging)
        assert reads.output.strip() == "findById"
        # a request without the token gets nothing at all
        with socketlib.create_connection(("127.0.0.1", agent.port), timeout=10) as s:
            s.sendall(json.dumps({"token": "guess", "op": "exec", "payload": {}}).encode() + b"\n")
            assert s.recv(100) == b""
        wrong = Host(agent=(agent.port, "guess")).run(["true"], {}, 10)
        assert wrong.lost.startswith("the connection to the machine this run was started from failed or dropped")
        # a command that outlives its timeout is killed there, and said: a failed point, not a lost connection
        slow = there.run([sys.executable, "-c", "import time; time.sleep(30)"], {}, 1)
        assert slow.code == -9 and "killed after 1 s" in slow.output and slow.lost is None
        # it starts the run's load generators only, with the harness's own variables only
        for argv, env in ((["sh", "-c", "touch /tmp/owned"], {}), ([sys.executable, "-V"], {"LD_PRELOAD": "x"})):
            refused = there.run(argv, env, 10)
            assert refused.code == 127 and "could not run it there: PermissionError" in refused.output
        # and never writes a file outside the run's folder, whatever the request names
        bad = {"argv": [sys.executable, "-V"], "env": {}, "root": str(ROOT), "outputs": str(staging),
               "inputs": {"../../escaped": hosts.pack(b"x")}}
        out, report = hosts.run_payload(bad, lambda: None, {sys.executable})
        assert report["code"] == 127 and b"is not a file inside" in out


def test_server_host_and_client_host_together_are_refused(capsys, tmp_path):
    assert main(["run", "c-servers", "--server-host", "a", "--client-host", "b", "--dest", str(tmp_path / "x")]) == 2
    assert "with --server-host this machine is the client" in capsys.readouterr().err


def test_the_check_says_what_the_client_s_machine_lacks_in_one_line(monkeypatch):
    """What the other side answers a check with (here for this machine): a program it lacks, a CPU it has not, and
    fewer descriptors than the points' connections need, each said."""
    from iobench.run import limits
    monkeypatch.setattr(limits, "raise_nofile", lambda: {"after": {"soft": 1024, "hard": 1024}})
    found = hosts.facts({"tools": ["wrk", "no-such-generator"], "cpus": "0,99", "fds": 10_064}, "10.0.0.1")
    assert found["server_address"] == "10.0.0.1" and found["machine"]["cores"] >= 1
    [tool, cpu, fds] = found["missing"]
    assert tool == "no-such-generator (not on PATH, not in the checkout)"
    assert cpu.startswith("--client-cpus 0,99: CPU 99 is not among this machine's usable CPUs")
    assert fds.startswith("10,064 file descriptors for the generator's connections (the most it may open there: "
                          "1,024")
    with pytest.raises(hosts.HostError, match="lacks: no-such-generator"):
        Host(dest="x")._found(found)


@pytest.mark.parametrize("rel", ["/etc/passwd", "../x", "a/../../x", "."])
def test_a_path_from_the_other_machine_stays_inside_its_folder(tmp_path, rel):
    with pytest.raises(ValueError, match="is not a file inside"):
        hosts.inside(tmp_path, rel)
    assert hosts.inside(tmp_path, "raw/a.csv") == (tmp_path / "raw" / "a.csv").resolve()


def test_the_client_s_cpus_are_the_client_machine_s_to_check(tmp_path, monkeypatch, capsys):
    """--client-cpus names CPUs of the client's machine: with --client-host this machine does not refuse a CPU it
    lacks (the other machine's check does); --server-cpus is still checked here."""
    beyond = str(max(os.sched_getaffinity(0)) + 1)
    cfg = tmp_path / "ssh_config"
    cfg.write_text("Host laptop\n  HostName 127.0.0.1\n  Port 1\n  ConnectTimeout 3\n")
    monkeypatch.setenv("IOBENCH_SSH_CONFIG", str(cfg))
    base = ["run", "c-servers", "--client-host", "laptop", "--dest", str(tmp_path / "x")]
    assert main(base + ["--client-cpus", beyond]) == 2
    err = capsys.readouterr().err
    assert "not reachable over SSH" in err and "usable CPUs" not in err
    assert main(base + ["--server-cpus", beyond]) == 2
    assert f"--server-cpus {beyond}: CPU {beyond} is not among this machine's usable CPUs" in capsys.readouterr().err
