"""Hosts: where the load generator runs - this machine, or another one reached over SSH.

The harness runs on the server's machine (the server, its database, their CPU, memory and kernel counters are read
where they run, as in a local capture); with a client host, every load generator the runner starts runs there:

    client = Host.parse("alice@laptop:/home/alice/iom")   # the checkout's path there; default: the same as here
    facts = client.check(tools=["wrk"], cpus="1")   # that machine's metadata, or HostError naming what is missing
    ran = client.run(["taskset", "-c", "1", "wrk", ...], env, timeout_s=60, outputs=staging)
    client.close()                                  # the shared SSH connection goes; nothing is left running there

Over SSH (the OpenSSH client): one shared connection per host (ControlMaster, closed at the end), BatchMode (keys
and known hosts come from the user's own SSH set-up, or the file IOBENCH_SSH_CONFIG names; the project stores no
credentials and never prompts), keep-alives and a connect timeout (a connection that drops ends the command with
exit 255 within seconds; it never hangs). On the other side `python -m iobench.run.hosts exec` runs the command in
the checkout there: the argv's paths into this checkout become paths into that one, files the generator writes under
`outputs` (its histograms) are written there and sent back, its CPU time and its cores' steal are counted there, and
it is killed when the connection goes (its stdin closes). Latency is measured on the generator's own clock: no
two clocks are ever compared.
"""
from __future__ import annotations

import base64
import gzip
import json
import os
import re
import resource
import secrets
import shlex
import socket
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from iobench.run import metadata
from iobench.run.procs import last_line
from iobench.servers.manifest import ROOT

EXIT_SSH = 255                # what ssh exits with when the connection fails or drops
MARK = "@@iobench-host "      # the line the other side ends its output with: its counts and files, as JSON
CONNECT_TIMEOUT_S = 10
ALIVE_INTERVAL_S, ALIVE_COUNT = 2, 3  # a silent connection is given up after about 6 s


class HostError(Exception):
    """A host the run cannot use: unreachable, or missing what the run needs (said in one line)."""


@dataclass
class Ran:
    """One command's run: its output (stdout and stderr as one), exit code, CPU and wall seconds, and the steal of
    the cores it was pinned to (None: not pinned, or not counted)."""
    output: str
    code: int
    cpu_s: float
    wall_s: float
    steal_s: float | None = None
    lost: str | None = None  # the connection to the host failed or dropped: what ssh said


def pack(data: bytes) -> str:
    """A file's bytes as they travel in a report or a request (gzip, then base64)."""
    return base64.b64encode(gzip.compress(data)).decode()


def unpack(text: str) -> bytes:
    return gzip.decompress(base64.b64decode(text))


def inside(folder: Path | str, rel: str) -> Path:
    """folder/rel, refused (ValueError) where rel is absolute or leaves the folder: a path from the other machine
    never writes outside the folder it names."""
    base = Path(folder).resolve()
    path = (base / rel).resolve()
    if Path(rel).is_absolute() or not path.is_relative_to(base) or path == base:
        raise ValueError(f"{rel!r} is not a file inside {folder}")
    return path


def _killed_note(timeout_s: float) -> str:
    return f"\n[iobench] killed after {timeout_s:.0f} s\n"


def pinned_cpus(argv: list[str]) -> str | None:
    """The CPU list a command line pins itself to (taskset -c LIST ...), if any."""
    for i, a in enumerate(argv[:-2]):
        if a == "taskset" and argv[i + 1] == "-c":
            return argv[i + 2]
    return None


@dataclass
class Host:
    """A machine a role runs on: this one (dest None), an SSH destination with the project's checkout at `root`, or
    (agent: the port its Agent is forwarded to here, and its token) the machine whose SSH session started this run,
    when that run was started with --server-host (run_there)."""
    dest: str | None = None
    root: str = str(ROOT)
    config: str | None = field(default_factory=lambda: os.environ.get("IOBENCH_SSH_CONFIG") or None)
    agent: tuple[int, str] | None = None
    _control: str | None = None

    @classmethod
    def parse(cls, text: str | None) -> "Host":
        """"[user@]host[:path]" (an SSH destination, or a Host of the SSH config; the checkout's path there, default
        this checkout's); None or "local": this machine. ValueError for anything else."""
        if text is None or text == "local":
            return cls()
        dest, colon, path = text.partition(":")
        if not re.fullmatch(r"(?:[A-Za-z0-9._][A-Za-z0-9._-]*@)?[A-Za-z0-9._][A-Za-z0-9._-]*", dest):
            raise ValueError(f"{text!r} is not an SSH destination ([user@]host, optionally :/path/of/the/checkout)")
        if colon and not path.startswith("/"):
            raise ValueError(f"{text!r}: the checkout's path on that host must be absolute (host:/path)")
        return cls(dest=dest, root=path.rstrip("/") or str(ROOT) if colon else str(ROOT))

    @property
    def local(self) -> bool:
        return self.dest is None and self.agent is None

    def __str__(self) -> str:
        return "this machine" if self.local else self.dest or "the machine this run was started from"

    # -- SSH ----------------------------------------------------------------------------------
    def ssh(self, remote: list[str], forward: tuple[int, int] | None = None) -> list[str]:
        """The ssh command line that runs `remote` (an argv) in the checkout on this host; with forward (there, here),
        a connection of its own whose port `there` on that host's loopback reaches port `here` on this one's."""
        if self._control is None:
            self._control = tempfile.mkdtemp(prefix="iom-ssh-")
        options = ["-o", "BatchMode=yes", "-o", f"ConnectTimeout={CONNECT_TIMEOUT_S}",
                   "-o", f"ServerAliveInterval={ALIVE_INTERVAL_S}", "-o", f"ServerAliveCountMax={ALIVE_COUNT}",
                   "-o", "LogLevel=ERROR"]
        if forward:
            options += ["-o", "ControlMaster=no", "-o", "ControlPath=none", "-o", "ExitOnForwardFailure=yes",
                        "-R", f"127.0.0.1:{forward[0]}:127.0.0.1:{forward[1]}"]
        else:
            options += ["-o", "ControlMaster=auto", "-o", "ControlPersist=120",
                        "-o", f"ControlPath={self._control}/%C"]
        if self.config:
            options = ["-F", self.config] + options
        command = f"cd {shlex.quote(self.root)} && exec {shlex.join(remote)}"
        return ["ssh", *options, self.dest, "--", command]

    def python(self, *args: str) -> list[str]:
        """`python -m iobench.run.hosts ARGS` in the checkout there, with its environment's Python."""
        return self.ssh(["env", "PYTHONPATH=code", ".venv/bin/python", "-m", "iobench.run.hosts", *args])

    def close(self) -> None:
        """End the shared connection (its ssh process here) and forget it."""
        if self._control is None:
            return
        if self.dest:
            try:
                subprocess.run(self.ssh(["true"])[:-3] + ["-O", "exit", self.dest], stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                pass  # its master ends by itself (ControlPersist); the run's own outcome is what matters
        shutil.rmtree(self._control, ignore_errors=True)
        self._control = None

    # -- checks -------------------------------------------------------------------------------
    def check(self, tools: list[str], cpus: str | None, fds: int = 0) -> dict:
        """Before a run: the host answers over SSH, has this commit of the project built, the tools the plan's load
        needs, the CPUs it is pinned to and the descriptors its connections need. Returns its metadata
        (machine, versions, git, usable CPUs, descriptor limit); HostError says everything missing at once."""
        if self.local:
            return {}
        if self.agent:
            return self._check_agent(tools, cpus, fds)
        try:
            p = subprocess.run(self.python("check", json.dumps({"tools": tools, "cpus": cpus, "fds": fds})),
                               stdin=subprocess.DEVNULL, capture_output=True, text=True,
                               timeout=CONNECT_TIMEOUT_S * 3 + 30)
        except subprocess.TimeoutExpired:
            raise HostError(f"--client-host {self.dest}: no answer over SSH within "
                            f"{CONNECT_TIMEOUT_S * 3 + 30} s") from None
        if p.returncode == EXIT_SSH:
            raise HostError(f"--client-host {self.dest}: not reachable over SSH (keys, known hosts and "
                            f"IOBENCH_SSH_CONFIG are the user's own): {p.stderr.strip()[-300:]}")
        if p.returncode != 0 or not p.stdout.strip():
            raise HostError(f"--client-host {self.dest}: the project's harness did not run in {self.root} there "
                            f"(exit {p.returncode}; is the checkout there, built with make ready?): "
                            f"{(p.stderr or p.stdout).strip()[-300:]}")
        try:
            found = json.loads(p.stdout.strip().splitlines()[-1])
        except ValueError:
            raise HostError(f"--client-host {self.dest}: its check answered something else than its facts: "
                            f"{p.stdout.strip()[-300:]}") from None
        return {"ssh": self.dest, "root": self.root, **self._found(found)}

    def _found(self, found: dict) -> dict:
        """The other machine's facts, once they show it has all the run needs (HostError: what it lacks)."""
        here = metadata.git()
        missing = list(found.pop("missing"))
        if here.get("commit") and found["git"].get("commit") != here["commit"]:
            missing.append(f"the same commit of the project (here {here['commit'][:12]}, "
                           f"there {str(found['git'].get('commit'))[:12]})")
        if missing:
            raise HostError(f"the client's machine ({self}) lacks: " + "; ".join(missing))
        return found

    def _check_agent(self, tools: list[str], cpus: str | None, fds: int) -> dict:
        # SSH_CONNECTION here: "client_ip client_port server_ip server_port": this machine as the other reaches it
        connection = os.environ.get("SSH_CONNECTION", "").split()
        text = self._ask({"op": "check", "asked": {"tools": tools, "cpus": cpus, "fds": fds},
                          "server_address": connection[2] if len(connection) == 4 else None}, 120)
        try:
            return {"via": "the SSH session this run was started from (--server-host)",
                    **self._found(json.loads(text))}
        except ValueError:
            raise HostError(f"the machine this run was started from did not answer its check: {text[-300:]}") from None

    def _ask(self, request: dict, timeout_s: float) -> str:
        """One request to the Agent this host is (over the port forwarded to it); its whole answer. A timeout
        closes the connection, which kills what it ran."""
        port, token = self.agent
        deadline = time.monotonic() + timeout_s
        chunks: list[bytes] = []
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=CONNECT_TIMEOUT_S) as s:
                s.sendall((json.dumps({"token": token, **request}) + "\n").encode())
                while True:
                    s.settimeout(max(0.01, deadline - time.monotonic()))
                    data = s.recv(1 << 16)
                    if not data:
                        break
                    chunks.append(data)
        except socket.timeout:
            return b"".join(chunks).decode(errors="replace") + _killed_note(timeout_s)
        except OSError as exc:
            return b"".join(chunks).decode(errors="replace") + f"\n[iobench] agent: {exc}\n"
        return b"".join(chunks).decode(errors="replace")

    # -- run ----------------------------------------------------------------------------------
    def run(self, argv: list[str], env: dict, timeout_s: float, outputs: Path | None = None) -> Ran:
        """Run a load generator on this host until it ends (killed after timeout_s); files it writes under
        `outputs` (a folder here) arrive there as if it had run here."""
        if self.local:
            return run_here(argv, env, timeout_s)
        argv, inputs = carried(argv, outputs)
        payload = {"argv": argv, "env": env, "root": str(ROOT), "outputs": str(outputs) if outputs else None,
                   "inputs": inputs, "timeout_s": timeout_s}
        t0 = time.monotonic()
        if self.agent:
            out = self._ask({"op": "exec", "payload": payload}, timeout_s + 30)  # its own timeout kills it first
            code = -9 if out.endswith(_killed_note(timeout_s + 30)) else 0
            return self._ran(out, code, time.monotonic() - t0, outputs)
        encoded = base64.b64encode(json.dumps(payload).encode()).decode()
        # its stdin stays open while the generator runs: closing it (or ssh's end) kills the generator there
        p = subprocess.Popen(self.python("exec", encoded), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        chunks: list[str] = []
        reader = threading.Thread(target=lambda: chunks.append(p.stdout.read()), daemon=True)
        reader.start()
        try:
            code = p.wait(timeout=timeout_s)
            note = ""
        except subprocess.TimeoutExpired:
            p.kill()
            code, note = p.wait(), _killed_note(timeout_s)
        finally:
            reader.join(10)
            p.stdin.close()
            p.stdout.close()
        out = "".join(chunks) + note
        if note:
            code = -9
        return self._ran(out, code, time.monotonic() - t0, outputs)

    def _ran(self, out: str, code: int, wall: float, outputs: Path | None) -> Ran:
        """What came back: the output, the report's counts and the files written there, put where they belong."""
        output, counts = split_report(out or "")
        if counts is None:
            if code == -9:  # killed here at its timeout: a failed point, as it would be on one machine
                return Ran(output, code, 0.0, wall)
            said = last_line(output)[:200]
            how = (f"the SSH connection to {self.dest} failed or dropped (ssh exit {code}"
                   + (f": {said})" if said else ")")) if self.dest else \
                f"the connection to {self} failed or dropped" + (f": {said}" if said else "")
            return Ran(output + f"\n[iobench] {how}\n", code if code else EXIT_SSH, 0.0, wall, lost=how)
        for rel, data in counts.get("files", {}).items():
            target = inside(outputs, rel)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(unpack(data))
        return Ran(output, counts["code"], counts["cpu_s"], counts["wall_s"], counts.get("steal_s"))


def carried(argv: list[str], outputs: Path | None) -> tuple[list[str], dict[str, str]]:
    """The files under `outputs` a command line reads (written there for it: an RPC call's bytes), by their path
    relative to it, to be written there before it runs; the command line with each such file named by its path
    under `outputs` (the other side puts its own folder in its place)."""
    if outputs is None:
        return argv, {}
    inputs: dict[str, str] = {}
    named = []
    for a in argv:
        path = Path(a) if a.startswith("/") else ROOT / a
        if a and path.is_file() and path.resolve().is_relative_to(Path(outputs).resolve()):
            rel = str(path.resolve().relative_to(Path(outputs).resolve()))
            inputs[rel] = pack(path.read_bytes())
            a = f"{outputs}/{rel}"
        named.append(a)
    return named, inputs


def split_report(text: str) -> tuple[str, dict | None]:
    """The generator's output, and the other side's report from its last line (None: no report came)."""
    head, mark, tail = text.rpartition("\n" + MARK)
    if not mark:
        if text.startswith(MARK):
            head, tail = "", text[len(MARK):]
        else:
            return text, None
    try:
        return head, json.loads(tail.strip())
    except ValueError:
        return text, None


def run_here(argv: list[str], env: dict, timeout_s: float) -> Ran:
    """Run a load generator on this machine; its CPU from the children's rusage."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, env=os.environ | env, cwd=ROOT, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout_s)
        output, code = p.stdout, p.returncode
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        output, code = out + _killed_note(timeout_s), -9
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Ran(output, code, cpu, wall)


# ---- the server on another machine: the harness runs there, this machine is its client ----------------------------

class Agent:
    """This machine as the client host of a harness that runs on the server's machine (run_there): it runs the load
    generators that harness sends, as the other side of Host.run over SSH does, through a port of this machine's
    loopback that SSH forwards from there. Only a request with its token (sent to that harness on its stdin, never on
    a command line) is served."""

    def __init__(self, allowed: list[str]) -> None:
        self.allowed = set(allowed)  # the only programs it starts (drivers.programs of the run's points)
        self.token = secrets.token_hex(16)
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self.port = self._sock.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> "Agent":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._sock.close()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(10)  # a request comes whole at once, or not at all
            line = b""
            try:
                while not line.endswith(b"\n") and len(line) < (1 << 20):  # a request is small (an RPC call's bytes)
                    data = conn.recv(1 << 16)
                    if not data:
                        return
                    line += data
                request = json.loads(line)
            except (OSError, ValueError):
                return
            if not isinstance(request, dict) or not secrets.compare_digest(
                    str(request.get("token", "")).encode(), self.token.encode()):
                return
            conn.settimeout(None)
            try:
                if request.get("op") == "check":
                    conn.sendall(json.dumps(facts(request["asked"], request.get("server_address"))).encode())
                elif request.get("op") == "exec":
                    out, report = run_payload(request["payload"], _until_eof(lambda: conn.recv(4096)), self.allowed)
                    conn.sendall(reported(out, report))
            except (OSError, KeyError, TypeError):
                return
            try:  # the end of the answer, at once: a close alone waits for the thread still reading the lifeline
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def run_there(server: Host, args: list[str], dest: Path, overwrite: bool,
              programs: list[str]) -> tuple[int, Path | None, str]:
    """`iobench run ARGS` on the server's machine, this one its client: the harness there runs the servers and
    samples them, and sends every load generator here (an Agent, through a port SSH forwards). Its progress shows
    here as it goes; its dataset (or a failed run's output) comes back into dest's folder. Closing this end (Ctrl-C
    here) stops the run there as Ctrl-C there would. Returns its exit status, what came back (None: nothing) and the
    run's folder there (removed once copied here; left there only when it could not be copied)."""
    tmp = f"{server.root}/_build/runs-for-a-client/{secrets.token_hex(8)}"  # in the checkout there: its user's
    stage = dest.parent / ".staging" / f"{dest.name}-from-{server.dest}-{secrets.token_hex(3)}"
    with Agent(programs) as agent:
        there = 20000 + secrets.randbelow(40000)  # a port taken there fails the forwarding, and ssh says so
        remote = ["env", "PYTHONPATH=code", ".venv/bin/python", "-m", "iobench", "run", *args,
                  "--dest", f"{tmp}/{dest.name}", "--client-agent", str(there)]
        # a session of its own: Ctrl-C here reaches this process only, which then ends the run there in order
        p = subprocess.Popen(server.ssh(remote, forward=(there, agent.port)), stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, start_new_session=True)
        try:
            p.stdin.write(agent.token + "\n")
            p.stdin.flush()
            p.stdout.read()  # the dataset's path there; the progress came on stderr, as it went
            code = p.wait()
        except BrokenPipeError:
            code = p.wait()
        except KeyboardInterrupt:
            p.stdin.close()  # the harness there stops as on Ctrl-C: its servers stopped, its data untouched
            try:
                p.wait(120)  # until it has stopped there (its servers, its partial output written)
            except subprocess.TimeoutExpired:
                p.kill()
            _remove(server, tmp)
            raise
    fetched = _fetch(server, tmp, stage)
    if fetched is None:
        shutil.rmtree(stage, ignore_errors=True)
        server.close()
        return code, None, tmp
    _remove(server, tmp)
    made = fetched / dest.name
    if code == 0 and not made.is_dir():
        return 1, stage, tmp  # it said it finished, but what came back holds no dataset
    if code == 0:
        if dest.exists():
            if not overwrite:
                raise HostError(f"{dest} appeared during the run; the run is kept in {made}")
            old = stage / "replaced"
            os.replace(dest, old)
            os.replace(made, dest)
            shutil.rmtree(old)
        else:
            os.replace(made, dest)
        shutil.rmtree(stage, ignore_errors=True)
        return 0, dest, tmp
    return code, stage, tmp


def _fetch(server: Host, tmp: str, stage: Path) -> Path | None:
    """The run's folder there, copied here as it streams (tar over the same SSH set-up); None when nothing came."""
    import tarfile
    stage.mkdir(parents=True, exist_ok=True)
    p = subprocess.Popen(server.ssh(["tar", "-C", tmp, "-cf", "-", "."]), stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        with tarfile.open(fileobj=p.stdout, mode="r|") as tar:
            for member in tar:  # files and folders inside stage only (tarfile's own filter is Python 3.11.4+)
                if not (member.isfile() or member.isdir()):
                    continue
                target = stage if member.name in (".", "./") else inside(stage, member.name)
                if member.isdir():
                    target.mkdir(parents=True, exist_ok=True)
                else:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with tar.extractfile(member) as src, open(target, "wb") as out:
                        shutil.copyfileobj(src, out)
    except (tarfile.TarError, ValueError):
        p.kill()
    finally:
        p.stdout.close()
        code = p.wait(600)
    return stage if code == 0 and any(stage.iterdir()) else None


def _remove(server: Host, tmp: str) -> None:
    subprocess.run(server.ssh(["rm", "-rf", tmp]), stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    server.close()


# ---- a machine's CPUs ----------------------------------------------------------------------------------------

def cpu_list(cpus: str) -> list[int]:
    """The CPUs a taskset list names ("1", "0-1", "1,3"), in order; ValueError for anything else."""
    found: list[int] = []
    for part in cpus.split(","):
        lo, dash, hi = part.strip().partition("-")
        if not lo.isdigit() or (dash and not hi.isdigit()) or (dash and int(hi) < int(lo)):
            raise ValueError(f"{cpus!r} is not a CPU list (examples: 1, 0-1, 0,2)")
        found += range(int(lo), int(hi or lo) + 1)
    return found


def check_cpus(cpus: str | None, flag: str = "CPU list") -> None:
    """Refuse (ValueError) a CPU list that names a CPU this process may not run on (not online, or outside its
    affinity): taskset would fail only once the server or generator starts."""
    if not cpus:
        return
    allowed = sorted(os.sched_getaffinity(0))
    missing = sorted(set(cpu_list(cpus)) - set(allowed))
    if missing:
        raise ValueError(f"{flag} {cpus}: CPU {', '.join(map(str, missing))} "
                         f"{'is' if len(missing) == 1 else 'are'} not among this machine's usable CPUs "
                         f"({','.join(map(str, allowed))})")


# ---- the other side -------------------------------------------------------------------------------------------

def _steal_s(cpus: str | None) -> float | None:
    from iobench.run import sampler
    return sampler.core_s(cpus).get("steal") if cpus else None


def run_payload(payload: dict, wait_gone: Callable[[], None], allowed: set[str] | None = None) -> tuple[bytes, dict]:
    """Run the command a harness sent (its paths into that checkout made paths into this one, its outputs into a
    folder here); return its output and the report: exit code, CPU and wall seconds, steal, the files it wrote.
    wait_gone blocks until the harness's end of the connection closes: then the command's process group is killed at
    once (run in a thread of its own); so is a command past the payload's timeout. With `allowed`, only those programs
    run (after an optional taskset -c LIST), with only IOBENCH_ variables: an Agent runs the book's generators, not
    whatever it is sent. A command that cannot run is reported (exit 127, and why), not raised."""
    try:
        return _run_payload(payload, wait_gone, allowed)
    except Exception as exc:  # a program missing, a path refused: said in the report, the connection kept
        return f"[iobench] could not run it there: {exc.__class__.__name__}: {exc}\n".encode(), {
            "code": 127, "cpu_s": 0.0, "wall_s": 0.0, "steal_s": None, "files": {}}


def _run_payload(payload: dict, wait_gone: Callable[[], None], allowed: set[str] | None) -> tuple[bytes, dict]:
    from iobench.run import limits
    limits.raise_nofile()  # as the harness does before it starts a generator on its own machine
    theirs, outputs = payload["root"], payload.get("outputs")
    if allowed is not None:
        argv = payload["argv"]
        program = argv[3] if argv[:2] == ["taskset", "-c"] and len(argv) > 3 else argv[0] if argv else ""

        def relative(p: str) -> str:  # a program in either checkout, by its path in it
            return p.replace(theirs + "/", "", 1) if p.startswith(theirs + "/") else \
                p.replace(str(ROOT) + "/", "", 1) if p.startswith(str(ROOT) + "/") else p
        if relative(program) not in {relative(a) for a in allowed}:
            raise PermissionError(f"{program!r} is not one of the load generators this run may start here")
        if any(not k.startswith("IOBENCH_") for k in payload["env"]):
            raise PermissionError("only IOBENCH_ variables may be set for a load generator here")
    with tempfile.TemporaryDirectory(prefix="iom-host-") as tmp:
        def here(a: str) -> str:
            a = a.replace(outputs, tmp) if outputs else a
            return a.replace(theirs, str(ROOT))
        argv = [here(a) for a in payload["argv"]]
        env = {k: here(v) for k, v in payload["env"].items()}
        for a in [*argv, *env.values()]:  # the folders of the files it writes, as they exist on the harness's side
            if tmp + "/" in a:
                Path(tmp + a.split(tmp, 1)[1].split()[0]).parent.mkdir(parents=True, exist_ok=True)
        given = payload.get("inputs") or {}
        for rel, data in given.items():  # the files it reads, written for it on the harness's side
            inside(tmp, rel).parent.mkdir(parents=True, exist_ok=True)
            inside(tmp, rel).write_bytes(unpack(data))
        cpus = pinned_cpus(argv)
        steal0 = _steal_s(cpus)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic()
        proc = subprocess.Popen(argv, env=os.environ | env, cwd=ROOT, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)

        def watch() -> None:  # the harness's end of the connection: its end means the harness is gone
            wait_gone()
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, 9)
                except ProcessLookupError:
                    pass
        threading.Thread(target=watch, daemon=True).start()
        try:
            out, _ = proc.communicate(timeout=payload.get("timeout_s"))
        except subprocess.TimeoutExpired:  # the harness kills it on its side at the same moment; here too
            os.killpg(proc.pid, 9)
            out, _ = proc.communicate()
            out += _killed_note(payload["timeout_s"]).encode()
        wall = time.monotonic() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        steal1 = _steal_s(cpus)
        files = {}
        for path in Path(tmp).rglob("*"):
            if path.is_file() and str(path.relative_to(tmp)) not in given:
                files[str(path.relative_to(tmp))] = pack(path.read_bytes())
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return out, {"code": proc.returncode, "cpu_s": cpu, "wall_s": wall,
                 "steal_s": None if steal0 is None else steal1 - steal0, "files": files}


def reported(out: bytes, report: dict) -> bytes:
    """A command's output with its report as the last line (what split_report takes apart)."""
    return out + (b"" if out.endswith(b"\n") or not out else b"\n") + (MARK + json.dumps(report) + "\n").encode()


def _until_eof(read: Callable[[], bytes]) -> Callable[[], None]:
    def wait() -> None:
        try:
            while read():
                pass
        except OSError:
            pass
    return wait


def serve_exec(encoded: str) -> int:
    """The other side of Host.run over SSH: the command's output, then the report; stdin closing (the connection
    gone) kills the command."""
    out, report = run_payload(json.loads(base64.b64decode(encoded)),
                              _until_eof(lambda: os.read(0, 4096)))  # the raw descriptor: no buffer lock at exit
    sys.stdout.buffer.write(reported(out, report))
    sys.stdout.flush()
    return 0


def facts(asked: dict, server_address: str | None) -> dict:
    """What a harness asks of the client's machine before a run: its metadata, and what it lacks."""
    from iobench.run import limits
    missing = [f"{tool} (not on PATH, not in the checkout)" for tool in asked["tools"]
               if not (shutil.which(tool) or (ROOT / tool).exists())]
    try:
        check_cpus(asked.get("cpus"), "--client-cpus")
    except ValueError as exc:
        missing.append(str(exc))
    got = limits.raise_nofile()["after"]["soft"]
    if asked.get("fds") and got != resource.RLIM_INFINITY and got < asked["fds"]:
        missing.append(f"{asked['fds']:,} file descriptors for the generator's connections (the most it may open "
                       f"there: {got:,}; raise the hard limit, RLIMIT_NOFILE)")
    found = metadata.collect()
    found.pop("harness_argv", None)
    found.pop("schema_version", None)
    if not server_address:
        missing.append("SSH_CONNECTION (the check runs over SSH: how the two machines reach each other)")
    return {**found, "server_address": server_address, "usable_cpus": sorted(os.sched_getaffinity(0)),
            "limits": limits.snapshot(), "missing": missing}


def serve_check(spec: str) -> int:
    """The other side of Host.check over SSH, as one JSON line. SSH_CONNECTION is "client_ip client_port server_ip
    server_port", the harness's machine being SSH's client: its address as this host reaches it is where the
    servers there listen."""
    connection = os.environ.get("SSH_CONNECTION", "").split()
    print(json.dumps(facts(json.loads(spec), connection[0] if connection else None)))
    return 0


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "exec":
        code = serve_exec(argv[1])
        os._exit(code)  # at once: the thread watching stdin is still reading it
    if len(argv) == 2 and argv[0] == "check":
        return serve_check(argv[1])
    print("usage: python -m iobench.run.hosts exec PAYLOAD | check SPEC (the harness calls these over SSH)",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

