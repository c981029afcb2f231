"""Two machines on one: a server namespace and a client namespace joined by a veth pair (netlink.VethLink), an SSH
server (dropbear, with a host key and a user key made for the test) in the client's, the harness in the server's
with --client-host. This tests the orchestration, not performance: both namespaces share this machine's cores.

- a smoke capture across them has every column a local capture fills, and both machines' metadata;
- a server killed during a point fails that point with its cause, its later points are not run against it, the run
  ends with a summary and exit 1, and nothing is left running on either side;
- the SSH server killed during a point fails that point (ssh's own words), never hangs, and leaves no generator
  running on the client's side.

make test-live runs these (pytest -m live): they need root, iproute2, the OpenSSH client and dropbear-bin, all of
which the README's first command installs."""
from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iobench.run import procs
from iobench.run.netlink import VethLink
from iobench.servers.manifest import ROOT
from test_lifecycle import CODE

pytestmark = pytest.mark.live

CLIENT, SERVER = "iom-client", "iom-server"  # the two machines' names in the test's SSH config
LEFT_THERE = ROOT / "_build" / "runs-for-a-client"  # where a --server-host run works on the server's machine


class Machines:
    def __init__(self, link: VethLink, tmp: Path):
        self.link, self.tmp = link, tmp
        self.home = tmp / "home"   # root's home as the SSH server sees it: only the test's key is authorised
        (self.home / ".ssh").mkdir(parents=True)
        self.hostkey, self.key = tmp / "host_ed25519", tmp / "id_ed25519"
        subprocess.run(["dropbearkey", "-t", "ed25519", "-f", str(self.hostkey)], check=True, capture_output=True)
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "iom-test", "-f", str(self.key)],
                       check=True)
        (self.home / ".ssh" / "authorized_keys").write_text((tmp / "id_ed25519.pub").read_text())
        os.chmod(self.home / ".ssh", 0o700)
        self.config = tmp / "ssh_config"
        self.config.write_text("".join(
            f"Host {name}\n  HostName {address}\n  User root\n  IdentityFile {self.key}\n  IdentitiesOnly yes\n"
            f"  UserKnownHostsFile {tmp / 'known_hosts'}\n  StrictHostKeyChecking accept-new\n"
            for name, address in ((CLIENT, link.client_host), (SERVER, link.server_host))))
        self.sshd: dict[str, subprocess.Popen] = {}

    def namespace(self, name: str) -> str:
        return self.link.client_netns if name == CLIENT else self.link.netns

    def enter(self, name: str = SERVER) -> list[str]:
        """Into one machine's network namespace only (`ip netns exec` would mount a /sys of its own, without the
        cgroups the harness counts a server's CPU in)."""
        return ["nsenter", f"--net=/run/netns/{self.namespace(name)}"]

    def start_sshd(self, name: str = CLIENT) -> None:
        """dropbear on one machine, in a mount namespace of its own whose /etc/passwd gives root the test's home (so
        that only the test's key is authorised, and root's own files stay where they are)."""
        passwd = self.tmp / "passwd"
        passwd.write_text("".join(
            (":".join(f[:5] + [str(self.home)] + f[6:]) if f[0] == "root" else line)
            for line in Path("/etc/passwd").read_text().splitlines(keepends=True) for f in [line.split(":")]))
        address = self.link.client_host if name == CLIENT else self.link.server_host
        script = (f"mount --bind {passwd} /etc/passwd && exec dropbear -F -E -s -p {address}:22 "
                  f"-r {self.hostkey} -P {self.tmp / (name + '.pid')}")
        self.sshd[name] = procs.spawn(self.enter(name) + ["unshare", "--mount", "--propagation", "private",
                                                          "sh", "-c", script],
                                      stderr=open(self.tmp / "dropbear.log", "ab"))
        other = SERVER if name == CLIENT else CLIENT
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.on(other, ["ssh", "-F", str(self.config), "-o", "BatchMode=yes", name, "true"],
                       timeout=20).returncode == 0:
                return
            time.sleep(0.3)
        raise AssertionError(f"dropbear did not answer: {(self.tmp / 'dropbear.log').read_text()[-500:]}")

    def kill_sshd(self, name: str) -> None:
        """SIGKILL one machine's SSH server: its listener and every session (as a crash or a reboot there would)."""
        address = self.link.client_host if name == CLIENT else self.link.server_host
        subprocess.run(["pkill", "-KILL", "-f", f"dropbear -F -E -s -p {address}"], capture_output=True)

    def stop_sshd(self, name: str = CLIENT) -> None:
        if name in self.sshd:
            procs.stop_group(self.sshd.pop(name), 2.0)
        self.kill_sshd(name)

    def on(self, name: str, argv: list[str], timeout: float = 600, **kw) -> subprocess.CompletedProcess:
        env = {**os.environ, "PYTHONPATH": str(CODE), "IOBENCH_SSH_CONFIG": str(self.config)}
        return subprocess.run(self.enter(name) + argv, env=env, cwd=ROOT, text=True,
                              capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL, **kw)

    def iobench(self, *args: str, on: str = SERVER) -> subprocess.Popen:
        env = {**os.environ, "PYTHONPATH": str(CODE), "IOBENCH_SSH_CONFIG": str(self.config)}
        return subprocess.Popen(self.enter(on) + [sys.executable, "-m", "iobench", *args],
                                env=env, cwd=ROOT, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def machines(tmp_path_factory):
    VethLink.check_available()
    tmp = tmp_path_factory.mktemp("two-machines")
    with VethLink(rate_mbit=0, offloads=True) as link:
        m = Machines(link, tmp)
        m.start_sshd(CLIENT)
        m.start_sshd(SERVER)
        try:
            yield m
        finally:
            m.stop_sshd(CLIENT)
            m.stop_sshd(SERVER)


def rows(folder: Path) -> list[dict]:
    with open(folder / "results.csv") as f:
        return list(csv.DictReader(f))


def filled(table: list[dict]) -> set[str]:
    """The columns some row fills."""
    return {k for row in table for k, v in row.items() if v not in ("", None)}


def leftovers() -> list[str]:
    """Generators or book servers still running anywhere on this machine (both 'machines' are on it)."""
    p = subprocess.run(["pgrep", "-a", "-f", r"(^|/)(wrk|iom-openloop|c-epoll|ab) |iobench\.run\.hosts exec|"
                        rf"ssh .*({CLIENT}|{SERVER})|-m iobench run"],
                       capture_output=True, text=True)
    return [line for line in p.stdout.splitlines() if "pgrep" not in line]


def pgrep(pattern: str) -> list[str]:
    return subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout.split()


def during_load(proc: subprocess.Popen, act) -> None:
    """Once a load generator runs against c-epoll (wrk, on either machine: both are this one), act, once."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if subprocess.run(["pgrep", "-x", "wrk"], capture_output=True).stdout and pgrep("build/c-epoll "):
            act()
            return
        time.sleep(0.05)
    raise AssertionError("never saw c-epoll under load")


def capture_here(dataset: str, only: list[str], dest: Path) -> None:
    """The same smoke capture on one machine, over loopback, as the book's are made."""
    p = subprocess.run([sys.executable, "-m", "iobench", "run", dataset, "--profile", "smoke", *only,
                        "--no-battery", "--dest", str(dest)], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(CODE)},
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-2000:]


CAPTURES = [("c-servers", ["--servers", "c-epoll"]), ("open-loop", ["--servers", "c-epoll"]),
            ("java-servers", ["--servers", "java-netty"]), ("rpc-tail", ["--servers", "rpc-netty"])]


@pytest.mark.parametrize("dataset, only", CAPTURES, ids=[c[0] for c in CAPTURES])
def test_a_capture_across_two_machines_fills_every_column_a_local_one_does(machines, tmp_path, dataset, only):
    local, across = tmp_path / "local", tmp_path / "across"
    capture_here(dataset, only, local)
    battery = [] if dataset == "c-servers" else ["--no-battery"]  # the battery too, against the address the load used
    proc = machines.iobench("run", dataset, "--profile", "smoke", *only, *battery, "--dest", str(across),
                            "--client-host", CLIENT)
    out, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err[-2000:]
    if not battery:
        verdicts = json.loads((across / "battery.json").read_text())["c-epoll"]
        assert verdicts and all(v["passed"] for v in verdicts), [v for v in verdicts if not v["passed"]]
    here, there = rows(local), rows(across)
    assert [r["server"] for r in there] == [r["server"] for r in here]
    assert all(r.get("ok_run", r.get("ok")) == "True" for r in there), [r.get("failure") for r in there]
    missing = filled(here) - filled(there)
    assert not missing, f"columns a local capture fills and the capture across machines does not: {sorted(missing)}"
    meta = json.loads((across / "meta.json").read_text())
    client = meta["hosts"]["client"]
    assert client["ssh"] == CLIENT and client["server_address"] == machines.link.server_host
    assert client["git"]["commit"] == meta["git"]["commit"] and client["machine"]["cores"] >= 1
    assert meta["hosts"]["server"]["where"].startswith("this machine")
    assert all(f"http://{machines.link.server_host}:" in " ".join(c["argv"]) for c in meta["load_commands"])
    assert not leftovers()


def test_a_server_killed_mid_point_across_machines_fails_the_run_and_leaves_nothing(machines, tmp_path):
    dest = tmp_path / "killed"
    proc = machines.iobench("run", "c-servers", "--profile", "smoke", "--servers", "c-epoll", "c-poll",
                            "--no-battery", "--dest", str(dest), "--client-host", CLIENT)
    during_load(proc, lambda: os.kill(int(pgrep("build/c-epoll ")[0]), signal.SIGKILL))  # as the OOM killer would
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 1, err[-2000:]
    lines = err.strip().splitlines()
    assert "c-epoll died (killed by SIGKILL)" in lines[-1] and "output kept in" in lines[-1]
    assert any(line.startswith("failed: c-epoll rep 1") for line in lines)
    kept = Path(lines[-1].split("output kept in ", 1)[1].split(", the dataset", 1)[0])
    table = rows(kept)
    epoll = [r for r in table if r["server"] == "c-epoll"]
    [cut] = [i for i, r in enumerate(epoll) if r["failure"].startswith("cut short: c-epoll died (killed by SIGKILL)")]
    assert all(r["ok"] == "True" for r in epoll[:cut])  # measured before it died
    # the rest of its turn is not run against it; a later turn of c-epoll (the plan's) starts a process of its own
    after = [r["failure"] or "measured" for r in epoll[cut + 1:]]
    assert after and after[0] == "not measured: c-epoll died (killed by SIGKILL)"
    assert set(after) <= {"not measured: c-epoll died (killed by SIGKILL)", "measured"}
    stops = json.loads((kept / "meta.json").read_text())["stops"]
    assert len([s for s in stops if s["server"] == "c-epoll"]) == 1 + after.count("measured")
    assert all(r["ok"] == "True" for r in table if r["server"] == "c-poll")  # the next server was measured
    assert not dest.exists() and not leftovers()


def test_the_ssh_server_killed_mid_point_fails_the_point_never_hangs_and_leaves_no_generator(machines, tmp_path):
    dest = tmp_path / "sshd-killed"
    proc = machines.iobench("run", "c-servers", "--profile", "smoke", "--servers", "c-epoll", "--no-battery",
                            "--dest", str(dest), "--client-host", CLIENT)
    try:
        during_load(proc, lambda: machines.kill_sshd(CLIENT))  # its listener and its sessions
        t0 = time.monotonic()
        out, err = proc.communicate(timeout=300)
        assert time.monotonic() - t0 < 120  # every later point fails at once: nothing answers on port 22
        assert proc.returncode == 1, err[-2000:]
        lines = err.strip().splitlines()
        assert "the SSH connection to iom-client failed or dropped (ssh exit 255" in lines[-1]
        time.sleep(1)
        assert not leftovers()  # the generator there went with its connection
    finally:
        machines.stop_sshd(CLIENT)
        machines.start_sshd(CLIENT)  # for whatever runs after


def test_ctrl_c_across_machines_leaves_nothing_running_on_either_side(machines, tmp_path):
    dest = tmp_path / "interrupted"
    proc = machines.iobench("run", "c-servers", "--profile", "smoke", "--servers", "c-epoll", "--no-battery",
                            "--dest", str(dest), "--client-host", CLIENT)
    during_load(proc, lambda: proc.send_signal(signal.SIGINT))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    assert err.strip().splitlines()[-1] == "interrupted: servers stopped, links removed, captured data untouched"
    deadline = time.monotonic() + 10  # the generator there goes with its connection's end, within moments
    while leftovers() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not leftovers() and not dest.exists()


@pytest.mark.parametrize("dataset, only", CAPTURES[:2], ids=[c[0] for c in CAPTURES[:2]])
def test_a_run_started_on_the_client_with_server_host_brings_back_what_a_local_capture_fills(
        machines, tmp_path, dataset, only):
    """The other direction, as a reader with a laptop and a server would run it: the harness started on the client's
    machine, the run on the server's (its SSH server), the generators back here, the dataset copied here."""
    local, across = tmp_path / "local", tmp_path / "across"
    capture_here(dataset, only, local)
    proc = machines.iobench("run", dataset, "--profile", "smoke", *only, "--no-battery", "--dest", str(across),
                            "--server-host", SERVER, on=CLIENT)
    out, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err[-2000:]
    assert out.strip() == str(across) and "[1/" in err  # the progress lines came as they went
    missing = filled(rows(local)) - filled(rows(across))
    assert not missing, f"columns a local capture fills and the capture across machines does not: {sorted(missing)}"
    meta = json.loads((across / "meta.json").read_text())
    client = meta["hosts"]["client"]
    assert client["via"].startswith("the SSH session") and client["server_address"] == machines.link.server_host
    assert client["git"]["commit"] == meta["git"]["commit"]
    assert not leftovers()


def test_ctrl_c_on_the_client_stops_the_run_on_the_server_host_and_leaves_nothing(machines, tmp_path):
    dest = tmp_path / "interrupted"
    proc = machines.iobench("run", "c-servers", "--profile", "smoke", "--servers", "c-epoll", "--no-battery",
                            "--dest", str(dest), "--server-host", SERVER, on=CLIENT)
    during_load(proc, lambda: proc.send_signal(signal.SIGINT))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    assert err.strip().splitlines()[-1] == "interrupted: the run on iom-server stopped, nothing kept there"
    deadline = time.monotonic() + 30  # the harness there stops its server as on Ctrl-C
    while leftovers() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not leftovers() and not dest.exists()
    assert not list(LEFT_THERE.glob("*"))


def test_a_server_killed_on_the_server_host_fails_the_run_and_its_output_comes_back(machines, tmp_path):
    dest = tmp_path / "killed-there"
    proc = machines.iobench("run", "c-servers", "--profile", "smoke", "--servers", "c-epoll", "--no-battery",
                            "--dest", str(dest), "--server-host", SERVER, on=CLIENT)
    during_load(proc, lambda: os.kill(int(pgrep("build/c-epoll ")[0]), signal.SIGKILL))  # as the OOM killer would
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 1, err[-2000:]
    lines = err.strip().splitlines()
    assert any("c-epoll died (killed by SIGKILL)" in line for line in lines)
    assert lines[-1].startswith("error: the run on iom-server failed (it exited 1); what it left came back to ")
    came = Path(lines[-1].rsplit(" came back to ", 1)[1])
    [failed] = came.glob(".staging/*.failed")
    assert "c-epoll died (killed by SIGKILL)" in (failed / "FAILED.txt").read_text()
    assert not dest.exists() and not leftovers() and not list(LEFT_THERE.glob("*"))


def test_the_server_host_s_ssh_server_killed_mid_run_never_hangs_and_stops_the_run_there(machines, tmp_path):
    dest = tmp_path / "sshd-killed-there"
    proc = machines.iobench("run", "c-servers", "--profile", "smoke", "--servers", "c-epoll", "--no-battery",
                            "--dest", str(dest), "--server-host", SERVER, on=CLIENT)
    try:
        during_load(proc, lambda: machines.kill_sshd(SERVER))  # its listener and its sessions
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 1, err[-2000:]
        assert err.strip().splitlines()[-1].startswith(
            "error: the run on iom-server failed (its SSH connection failed or dropped); nothing came back (what it "
            f"left, if anything, is in {LEFT_THERE}/")
        deadline = time.monotonic() + 30  # the harness there, its input gone, stops as on Ctrl-C
        while leftovers() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not leftovers() and not dest.exists()
    finally:
        for left in LEFT_THERE.glob("*"):  # what the run there left (its machine is this one)
            subprocess.run(["rm", "-rf", str(left)])
        machines.stop_sshd(SERVER)
        machines.start_sshd(SERVER)
