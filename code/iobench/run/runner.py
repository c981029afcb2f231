"""The runner: one lifecycle for every experiment (after TechEmpower's toolset).

    for each network (loopback, or a link the experiment sets up and always takes down):
      for each repeat, for each turn (one server process and the points it serves):
        wait for TIME_WAIT sockets to drain -> start -> verify ->
        for each point: warm up (raw output kept, never measured) -> wait for a quiet
          machine -> measure while sampling /proc and the experiment's probes -> one row
        -> stop (SIGTERM, then SIGKILL) and check it exited 0
    then the experiment's finish (the HTTP battery), outliers, metadata and an atomic commit.

A server that dies (or stops listening) is noticed before each point and after it: the point it died in fails with
its exit status or signal, the rest of its turn is not run against it, the next turn starts a server of its own, and
the run ends in RunFailed (every failed point said, exit 1, output kept apart, the dataset untouched). With a client
host (hosts.py) the load generators run on another machine over SSH; a connection that drops fails its point the
same way.

An experiment says only what differs (servers, points, load, what it measured, columns): a new
study is a new experiment, not a new runner; its hooks are documented once, on Experiment. Whether
the generator was the bottleneck, its CPU and the CPU of everything else, and which server, repeat
and run a row belongs to, are added to every row here, once (`Run.row`). A run that fails or is interrupted
leaves the captured dataset untouched (results.py).
"""
from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import os
import secrets
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Sequence

from iobench.run import limits, metadata, profiles, sampler
from iobench.run.hosts import Host, check_cpus, cpu_list, run_here  # noqa: F401 (cpu_list: the runner's too)
from iobench.run.lifecycle import ServerProcess, Unsupported
from iobench.run.profiles import PROFILES, Profile
from iobench.run.results import OUTLIER_FRACTION, DatasetWriter, check_destination, raw_text
from iobench.servers.manifest import Server, ServerOptions

GENERATOR_BOUND_PCT = 90.0   # a load generator thread this busy is the bottleneck
NOISY_FOREIGN_CORES = 0.25   # other work on the machine during a measurement
QUIET_CORES = 0.15           # "quiet" before measuring: fewer cores busy than this
FLAGS = (("generator_bound", "GENERATOR-BOUND"), ("noisy", "NOISY"))  # a row's flags in its progress line
TIME_WAIT_DRAINED = 2000     # between servers, wait until fewer TIME_WAIT sockets remain
                             # (a few thousand of 28,000 ephemeral ports do not matter)


# ---- the machine ----------------------------------------------------------------------------

def time_wait_count() -> int:
    n = 0
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(path) as f:
                next(f)
                n += sum(1 for line in f if line.split()[3] == "06")
        except OSError:
            continue
    return n


def wait_time_wait_drained(progress: Callable[[str], None], max_wait_s: float,
                           below: int = TIME_WAIT_DRAINED) -> float:
    t0 = time.monotonic()
    n = time_wait_count()
    if n >= below:
        progress(f"waiting up to {max_wait_s:.0f} s for {n} TIME_WAIT sockets to drain")
        while n >= below and time.monotonic() - t0 < max_wait_s:
            time.sleep(1)
            n = time_wait_count()
    return time.monotonic() - t0


def wait_quiet(max_wait_s: float) -> float:
    """Wait until the machine is quiet; return the busy cores seen last."""
    deadline = time.monotonic() + max_wait_s
    busy = sampler.machine_busy_cores(0.5)
    while busy >= QUIET_CORES and time.monotonic() < deadline:
        busy = sampler.machine_busy_cores(0.5)
    return busy


def cpu_count(cpus: str | None) -> int:
    """How many CPUs a taskset list names ("1", "0-1", "1,3"); all of them when unpinned."""
    if not cpus:
        return os.cpu_count() or 1
    return len(cpu_list(cpus))


def generator_bound(client_cpu_pct: float, threads: int, client_cpus: str | None) -> bool:
    """The load generator was the bottleneck: its threads were busy GENERATOR_BOUND_PCT of
    the time, on as many cores as it had threads and was allowed."""
    return client_cpu_pct >= GENERATOR_BOUND_PCT * min(threads, cpu_count(client_cpus))


# ---- one load generator run -------------------------------------------------------------------

def run_load(argv: list[str], env: dict, timeout_s: float) -> tuple[str, int, float, float]:
    """Run a load generator on this machine; return (output, exit code, its CPU seconds, wall seconds)."""
    ran = run_here(argv, env, timeout_s)
    return ran.output, ran.code, ran.cpu_s, ran.wall_s


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def new_run_id() -> str:
    """When a run started (UTC) and a few random hex digits: sortable and unique."""
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


@dataclass
class Load:
    """One point's load: the warm-up's and the measured run's command lines (no warm-up command:
    the measured one warms up first, in the same process)."""
    warmup: list[str]
    measured: list[str]
    env: dict = field(default_factory=dict)
    threads: int = 1          # the generator's threads (for the generator-bound rule)
    timeout_s: float = 120.0  # the measured run is killed after this (the warm-up after its own + 60 s)


@dataclass
class Measured:
    """What one measured run left: the generator's output and what was sampled meanwhile."""
    output: str
    code: int
    raw_file: str
    started: str
    usage: sampler.Usage
    client_cpu_s: float
    client_cpu_pct: float
    generator_bound: bool
    foreign_cpu_cores: float
    probes: dict
    loop_ms: tuple[float, float] = (float("nan"), float("nan"))  # sampler.core_loop_ms just before and after
    # CPU seconds of what the harness started beside the server for it (its database: ServerProcess.companions),
    # by name, over the measured run: counted apart from the server's, and not as foreign CPU
    companions_cpu_s: dict = field(default_factory=dict)


class Probe:
    """Something sampled around the measured run only (TCP counters, a packet capture):
    start() just before the generator starts, stop() -> what to keep, just after it ends."""

    def start(self) -> None: ...

    def stop(self): ...


def load_columns(m: Measured) -> dict:
    """The columns every experiment's rows share, computed in one place."""
    u = m.usage
    return {"server_cpu_s": u.cpu_s, "server_cpu_pct": 100.0 * u.cpu_s / u.wall_s if u.wall_s else None,
            **{f"server_{k}": getattr(u, k) for k in ("user_s", "sys_s", "softirq_s", "steal_s")},
            "client_steal_s": u.client_steal_s,
            "server_rss_kib_max": u.rss_kib_max, "server_threads_max": u.threads_max,
            "client_cpu_pct": m.client_cpu_pct, "generator_bound": m.generator_bound,
            "foreign_cpu_cores": m.foreign_cpu_cores, "noisy": m.foreign_cpu_cores > NOISY_FOREIGN_CORES,
            "loop_ms_before": m.loop_ms[0], "loop_ms_after": m.loop_ms[1],
            "raw_file": m.raw_file, "started_at": m.started}


# ---- the experiment protocol ---------------------------------------------------------------

@dataclass
class Turn:
    """A server's turn: one server process and the points measured against it before it stops."""
    server: Server
    points: Sequence
    opts: ServerOptions = field(default_factory=ServerOptions)
    note: dict = field(default_factory=dict)  # goes into the stop record in meta.json


@dataclass
class Serving:
    """The server a hook concerns, as the runner serves it: its turn, the repeat, the running process, and what
    the experiment's alongside() keeps beside it (None where it keeps nothing). The runner hands it to every hook
    that concerns one server, so that no hook reads state another left on the experiment."""
    turn: Turn
    repeat: int
    srv: ServerProcess
    alongside: object = None


# The columns the runner adds to every row of every kind (those its table has): which server, turn and run the
# row belongs to (bookkeeping), and what measure_load sampled around the point's measured run (load_columns).
# A kind's measure returns only what it measured; returning one of these is an error.
BOOKKEEPING = ("server", "model", "lang", "repeat", "outlier", "server_cpus", "client_cpus", "profile", "run_id")


class Experiment:
    """What a dataset measures: the hooks below, which the runner calls in this order (run(), _serve()); each
    kind's experiment (kinds/<kind>/experiment.py) fills in the parts that differ, the runner owns the lifecycle.

        points -> meta -> measurements -> for each network: for each repeat: for each of its turns:
            start the turn's server -> alongside (entered) -> verify -> for each point: measure
            -> alongside (left) -> stop -> after_stop
        -> finish -> outliers flagged over outlier_keys -> commit
    """
    dataset: str = ""
    description: str = ""
    columns: list[str] = []  # its kind's columns (kinds/<kind>/dataset.py), and its plan's optional ones
    outlier_keys: tuple[str, ...] | None = None   # a point's key columns, to flag repeats apart
    outlier_value: str = "rps"
    time_wait_drained: int = TIME_WAIT_DRAINED    # before each server, wait until fewer remain
    rows_after_stop: bool = False    # rows are completed by after_stop (the server reports on exit)
    require_clean_exit: bool = False  # a server that does not exit 0 on SIGTERM stops the run

    def points(self, profile: str) -> Sequence:
        """The points a run under this profile measures (run.points)."""
        raise NotImplementedError

    def meta(self, run: "Run") -> dict:
        """What meta.json keeps of the experiment beside the runner's own: the plan, the servers, thresholds."""
        return {}

    def measurements(self, run: "Run", points: Sequence) -> int:
        """How many measurements one repeat of these points makes (for the progress lines)."""
        return len(points)

    def networks(self, run: "Run") -> Iterator[tuple[str, object, Sequence]]:
        """The networks the points run on: (name, link, points), where link is None for loopback
        or a netlink link, which the runner enters, describes in meta.json and always takes down."""
        yield "loopback", None, run.points

    def turns(self, run: "Run", points: Sequence, repeat: int) -> Iterator[Turn]:
        """The servers' turns in one repeat of these points, in order: which server process (its options)
        serves which points."""
        raise NotImplementedError

    def alongside(self, run: "Run", at: Serving) -> contextlib.AbstractContextManager:
        """What lives beside a server from its start to its stop (idle connections held open, a consumer):
        entered once the server listens, always left before it is stopped; what it yields is at.alongside."""
        return contextlib.nullcontext()

    def verify(self, run: "Run", at: Serving) -> None:
        """Check that the server answers as its kind expects before anything is measured."""
        at.srv.verify()

    def measure(self, run: "Run", at: Serving, point) -> dict:
        """Measure one point against the server `at` serves (run.measure_load: warm-up, quiet machine, the
        measured run sampled); return what was measured, as columns of the kind's table. The runner adds the
        BOOKKEEPING columns and what measure_load sampled."""
        raise NotImplementedError

    def progress_text(self, row: dict) -> str:
        """What the progress line says of a measured row (the runner adds its label and flags)."""
        return ""

    ok_column: str = "ok"  # the column that says a point's run succeeded (its kind's table's)

    def across_hosts(self, run: "Run") -> str | None:
        """Why these points cannot put their load on another machine (None: they can): what they run from this
        machine beside the generator (a link of its own, idle connections), said as "it ..."."""
        return None

    def unmeasured(self, at: Serving, point, why: str) -> dict:
        """The row of a point not measured (its server was lost before it): the point's own columns, failed, why."""
        fields = dataclasses.asdict(point) if dataclasses.is_dataclass(point) else {}
        return {**{k: v for k, v in fields.items() if k in self.columns}, self.ok_column: False, "failure": why}

    def after_stop(self, run: "Run", at: Serving, rows: list[dict]) -> None:
        """After the server stopped (rows_after_stop): complete its rows from what it left on exit."""

    def finish(self, run: "Run") -> None:
        """After every repeat: what the run does once (the HTTP battery)."""


@dataclass
class Run:
    """One run of an experiment, as the experiment's methods see it."""
    experiment: Experiment
    profile: Profile
    writer: DatasetWriter
    run_id: str
    points: Sequence
    server_cpus: str | None
    client_cpus: str | None
    progress: Callable[[str], None]
    link: object = None       # the current setting's link (netlink.DelayLink, VethLink), or None
    unsupported: dict = field(default_factory=dict)
    stops: list = field(default_factory=list)
    commands: list = field(default_factory=list)
    meta: dict = field(default_factory=dict)
    measured: Measured | None = None  # what measure_load sampled for the point being measured (None: nothing yet)
    faults: list = field(default_factory=list)  # a server lost during the run: (server, repeat, point label, why)
    client: Host = field(default_factory=Host)  # where the load generators run (this machine unless told)
    client_lost: str | None = None  # the client host's connection failed during the point being measured: why

    @property
    def host(self) -> str:
        """The address the servers bind and the load goes to: loopback; behind a link, the server's side of it;
        with a client host, the address that host reaches this machine at."""
        if self.link is not None:
            return self.link.server_host
        return self.meta.get("hosts", {}).get("client", {}).get("server_address", "127.0.0.1")

    def load(self, argv: list[str], env: dict, timeout_s: float) -> tuple[str, int, float, float, float | None]:
        """Run a load generator where the client runs (here, or the client host): output, exit code, its CPU and
        wall seconds, and its cores' steal where counted there (None: here, where the sampler counts it)."""
        ran = self.client.run(argv, env, timeout_s, outputs=self.writer.staging)
        if ran.lost:
            self.client_lost = self.client_lost or ran.lost
        return ran.output, ran.code, ran.cpu_s, ran.wall_s, ran.steal_s

    @property
    def netns(self) -> str | None:
        return self.link.netns if self.link is not None else None

    @property
    def client_prefix(self) -> list[str]:
        """How the load generator is started: pinned, and in the link's client namespace if it has one."""
        base = ["taskset", "-c", self.client_cpus] if self.client_cpus else []
        in_client = getattr(self.link, "in_client", None)
        return in_client(base) if in_client else base

    def warm_jvm(self, seconds: float, load: Callable[[float], tuple[list[str], dict]],
                 stem: Callable[[int], str]) -> None:
        """A JVM server's warm-up before its first measured point: `load(window)` (the generator's argv and env for
        a window of that many seconds) run in windows of the profile's jvm_window_s for `seconds` in all, each
        window's output kept as stem(w).txt, so that a reader sees the rate climb as the JIT compiles."""
        window = self.profile.jvm_window_s
        for w in range(1, max(1, round(seconds / window)) + 1):
            argv, env = load(window)
            started = now()
            output, code, _, _, _ = self.load(argv, env, window + 60)
            self.writer.write_raw(stem(w) + ".txt", raw_text(argv, env, output, code, started))

    def measure_load(self, srv: ServerProcess, stem: str, load: Load, probes: dict[str, Probe] | None = None,
                     warmup_s: float | None = None) -> Measured:
        """Warm up (output kept as stem.warmup.txt), wait for a quiet machine, then run the
        measured load while sampling the server's process group and the probes. A load with no
        warm-up command warms up inside the measured process (a JVM keeps what its JIT compiled)."""
        probes = probes or {}
        warmup_s = self.profile.warmup_s if warmup_s is None else warmup_s
        if load.warmup:
            started = now()
            output, code, _, _, _ = self.load(load.warmup, load.env, warmup_s + 60)
            self.writer.write_raw(stem + ".warmup.txt", raw_text(load.warmup, load.env, output, code, started))

        wait_quiet(self.profile.quiet_wait_s)
        here = self.client.local  # the generator on this machine: its cores are sampled here, its CPU is not foreign
        cpus = ",".join(c for c in (self.server_cpus, self.client_cpus if here else None) if c) or None
        loop_before = sampler.core_loop_ms(cpus)
        started = now()
        for p in probes.values():
            p.start()
        companions = srv.companions()
        before = {name: group.usage_s() for name, group in companions.items()}
        sampling = sampler.GroupSampler(srv.pid, srv.cpu_group, self.server_cpus,
                                        self.client_cpus if here else None).start()
        output, code, client_cpu, wall, client_steal = self.load(load.measured, load.env, load.timeout_s)
        usage = sampling.stop()
        if not here:
            usage = dataclasses.replace(usage, client_steal_s=client_steal)
        companions_cpu = {name: group.usage_s() - before[name] for name, group in companions.items()}
        kept = {name: p.stop() for name, p in probes.items()}
        loop_after = sampler.core_loop_ms(cpus)
        raw_file = self.writer.write_raw(stem + ".txt", raw_text(load.measured, load.env, output, code, started))
        self.commands.append({"raw_file": raw_file, "env": load.env, "argv": metadata.portable(load.measured)})
        client_pct = 100.0 * client_cpu / wall if wall > 0 else 0.0
        others = sum(companions_cpu.values()) + (client_cpu if here else 0.0)
        foreign = (max(0.0, (usage.system_busy_s - usage.cpu_s - others) / usage.wall_s)
                   if usage.wall_s else 0.0)
        self.measured = Measured(output, code, raw_file, started, usage, client_cpu, client_pct,
                                 generator_bound(client_pct, load.threads, self.client_cpus), foreign, kept,
                                 (loop_before, loop_after), companions_cpu)
        return self.measured

    def row(self, at: Serving, measured: dict) -> dict:
        """A point's row: what the experiment's measure returned, and the columns the runner adds to every row
        (BOOKKEEPING; load_columns, where measure_load ran for the point), those of them the kind's table has."""
        server = at.turn.server
        added = {"server": server.id, "model": server.model, "lang": server.lang, "repeat": at.repeat,
                 "outlier": False,  # set once every repeat of the point is in (results.flag_outliers)
                 "server_cpus": at.srv.cpus or "", "client_cpus": self.client_cpus or "",
                 "profile": self.profile.name, "run_id": self.run_id,
                 **(load_columns(self.measured) if self.measured is not None else {})}
        twice = sorted(set(added) & set(measured))
        if twice:
            raise ValueError(f"{type(self.experiment).__name__}.measure returned {', '.join(twice)}: "
                             "the runner adds those to every row")
        row = {**{k: v for k, v in added.items() if k in self.writer.columns}, **measured}
        if not succeeded(row, self.experiment.ok_column):  # a failed run's CPU says nothing of its generator or machine
            row.update({k: False for k, _ in FLAGS if k in row})
        return row


# ---- the lifecycle -------------------------------------------------------------------------

def run(experiment: Experiment, profile_name: str, dest: Path | None = None, overwrite: bool = False,
        server_cpus: str | None = "0", client_cpus: str | None = "1",
        progress: Callable[[str], None] | None = None, client_host: Host | None = None,
        client_programs: Sequence[str] = (), server_address: str | None = None) -> Path:
    """Measure an experiment under the smoke or full profile; return the dataset's folder. With a client host (an
    SSH destination: hosts.py) every load generator runs there, pinned to client_cpus there, and needs
    client_programs there, and descriptors for the most connections a point opens; the servers listen on
    server_address (default: the address SSH used between the two machines)."""
    profile = PROFILES[profile_name]
    progress = progress or (lambda msg: print(msg, file=sys.stderr, flush=True))
    dest = Path(dest) if dest else profile.dest(experiment.dataset)
    client = client_host or Host()
    # Before anything starts: the pinning, and where the run may write (profiles.DATA read now: a test's copy).
    check_cpus(server_cpus, "--server-cpus")
    if client.local:
        check_cpus(client_cpus, "--client-cpus")
    scratch = profile_name != "full"
    replacing = check_destination(dest, profiles.DATA, scratch=scratch, overwrite=overwrite)
    if replacing and not scratch:
        progress(f"this run replaces {dest} ({replacing}) once it finishes; until then it stays as it is")
    run_id = new_run_id()
    nofile = limits.raise_nofile()  # before anything starts: servers and generators inherit it
    r = Run(experiment, profile, None, run_id, experiment.points(profile_name), server_cpus, client_cpus,
            progress, client=client)
    hosts = {}
    if not client.local:  # the other machine answers and has what the points need there (HostError: what not)
        why = experiment.across_hosts(r)
        if why:
            from iobench.run.hosts import HostError
            raise HostError(f"{experiment.dataset} cannot put its load on another machine: {why}")
        try:
            hosts = {"server": {"where": "this machine: the harness, the server and what is sampled beside it"},
                     "client": client.check(list(client_programs), client_cpus, fds=descriptors_needed(r.points))}
        finally:
            client.close()  # opened again by the first load
        if server_address:
            hosts["client"].update(server_address=server_address, server_address_from="--server-address")
    writer = DatasetWriter(dest, run_id, experiment.columns, overwrite=overwrite or scratch)
    r.writer = writer
    r.meta = metadata.collect(
        dataset=experiment.dataset, description=experiment.description, run_id=run_id, profile=asdict(profile),
        started_at=now(), pinning={"server_cpus": server_cpus, "client_cpus": client_cpus},
        thresholds={"generator_bound_pct": GENERATOR_BOUND_PCT, "noisy_foreign_cores": NOISY_FOREIGN_CORES,
                    "quiet_cores": QUIET_CORES, "time_wait_drained": experiment.time_wait_drained},
        limits={**limits.snapshot(), "nofile_raised_from": nofile["before"]}, **({"hosts": hosts} if hosts else {}))
    r.meta.update(experiment.meta(r))
    try:
        total = profile.repeats * experiment.measurements(r, r.points)
        done = 0
        for name, link, points in experiment.networks(r):
            with link if link is not None else contextlib.nullcontext():
                r.link = link
                if link is not None:  # as set up, and as it still was after the last point
                    r.meta.setdefault("links", {})[name] = link.settings()
                for repeat in range(1, profile.repeats + 1):
                    for turn in experiment.turns(r, points, repeat):
                        if turn.server.id in r.unsupported:
                            done += len(turn.points)
                            continue
                        done = _serve(r, turn, repeat, done, total)
                if link is not None:
                    r.meta["links"][name]["after"] = link.settings()
                r.link = None
        if r.faults:  # the battery is not run against a run that lost a server; its output is kept apart
            summary = failed_summary(experiment, writer.rows)
            r.meta.update(finished_at=now(), unsupported=r.unsupported, stops=r.stops, load_commands=r.commands,
                          faults=[dict(zip(("server", "repeat", "point", "why"), f)) for f in r.faults])
            writer.write_json("meta.json", r.meta)
            kept = writer.abandon("a server or the client host was lost:\n" + "\n".join(summary))
            for line in summary:
                progress(f"failed: {line}")
            progress(f"run failed: a server or the client host was lost; its output is kept in {kept}; "
                     f"{dest} untouched")
            raise RunFailed(r.faults, summary, kept)
        experiment.finish(r)
        if experiment.outlier_keys:
            for row in writer.flag_outliers(experiment.outlier_keys, experiment.outlier_value):
                progress(f"outlier: {' '.join(f'{k}={row[k]}' for k in experiment.outlier_keys)} repeat "
                         f"{row['repeat']}: {row[experiment.outlier_value]:,.0f}, more than "
                         f"{100 * OUTLIER_FRACTION:.0f}% from its point's median ({row['raw_file']})")
        r.meta.update(finished_at=now(), unsupported=r.unsupported, stops=r.stops, load_commands=r.commands)
        writer.write_json("meta.json", r.meta)
        for line in failed_summary(experiment, writer.rows):
            progress(f"failed (as measured, the server alive): {line}")
        return writer.commit()
    except RunFailed:
        raise
    except BaseException as exc:
        failed = writer.abandon(f"{exc.__class__.__name__}: {exc}")
        progress(f"run abandoned ({exc.__class__.__name__}); partial output kept in {failed}; {dest} untouched")
        raise
    finally:
        client.close()


def _yes(v) -> bool:
    """None and a CSV's NaN are no."""
    return v is not None and v == v and bool(v)


def succeeded(row: dict, ok_column: str = "ok") -> bool:
    """Whether a row's run succeeded, by its kind's column (ok, or ok_run where ok counts answers)."""
    return _yes(row.get(ok_column))


def descriptors_needed(points: Sequence) -> int:
    """The descriptors a generator needs for the most connections a point opens, and a few of its own."""
    return max((getattr(p, "connections", 0) or 0 for p in points), default=0) + 64


def progress_line(ex: Experiment, label: str, row: dict) -> str:
    """The line a reader watches for a row: words (n/a) where a value does not exist, never None or NaN."""
    failure = row.get("failure") if isinstance(row.get("failure"), str) else ""
    return (f"{label}: " + (ex.progress_text(row) if succeeded(row, ex.ok_column)
                            else f"FAILED {failure or 'no reason recorded'}")
            + "".join(f"  {flag}" for k, flag in FLAGS if _yes(row.get(k))))


class RunFailed(Exception):
    """A run during which a server, or the client host's connection, was lost: every point was tried, its output
    kept apart (`kept`), the dataset untouched; `faults` are (server, repeat, point, why), `failed` every failed
    point's line."""

    def __init__(self, faults: list, failed: list[str], kept: Path):
        lost = sorted({f"{server} (repeat {repeat})" for server, repeat, _, _ in faults})
        super().__init__(f"{len(faults)} point{'s' if len(faults) != 1 else ''} not measured or cut short, "
                         f"at {', '.join(lost)}: {faults[0][3]}{' (and more: above)' if len(faults) > 1 else ''}")
        self.faults, self.failed, self.kept = faults, failed, kept


def failed_summary(ex: Experiment, rows: list[dict]) -> list[str]:
    """One line per failed row: which server, repeat and point, and why (the end of a run says them all)."""
    return [f"{row.get('server', '?')} rep {row.get('repeat', '?')}"
            f"{' ' + row['raw_file'] if isinstance(row.get('raw_file'), str) and row['raw_file'] else ''}: "
            f"{row.get('failure') if isinstance(row.get('failure'), str) else 'no reason recorded'}"
            for row in rows if not succeeded(row, ex.ok_column)]


def _measure(r: Run, at: Serving, point) -> tuple[dict, str | None, str | None]:
    """Measure one point; a server lost meanwhile, or the client host's connection, fails the point with that cause,
    whatever the load made of it (an error raised because of it is that loss too). Returns the row, the server's
    loss (None: it still serves) and the fault (the server's loss or the connection's; None: none)."""
    ex = r.experiment
    r.client_lost = None
    try:
        measured = ex.measure(r, at, point)
    except Exception:
        lost = at.srv.lost()
        fault = lost or r.client_lost
        if not fault:
            raise
        r.measured = None
        return r.row(at, ex.unmeasured(at, point, f"cut short: {fault} during this point")), lost, fault
    lost = at.srv.lost()
    fault = lost or r.client_lost
    if fault:
        measured = {**measured, ex.ok_column: False, "failure": f"cut short: {fault} during this point"}
    return r.row(at, measured), lost, fault


def _serve(r: Run, turn: Turn, repeat: int, done: int, total: int) -> int:
    """One server process: start, verify, measure its points, stop; returns the count done."""
    ex = r.experiment
    waited = wait_time_wait_drained(r.progress, r.profile.time_wait_max_s, ex.time_wait_drained)
    opts = ServerOptions(**{**asdict(turn.opts), "host": r.host})
    rows: list[tuple[str, dict]] = []

    def report(label: str, row: dict) -> None:
        r.writer.add_row(row)
        r.progress(progress_line(ex, label, row))
    lost: str | None = None  # why the rest of the turn cannot be measured (its server, or the client host, lost)
    server_lost: str | None = None
    pending = list(turn.points)

    def unmeasured(at: Serving, point, why: str) -> None:
        nonlocal done
        done += 1
        label = f"[{done}/{total}] {turn.server.id:20s} {point.label():28s} rep {repeat}"
        r.measured = None
        r.faults.append((turn.server.id, repeat, point.label(), why))
        row = r.row(at, ex.unmeasured(at, point, f"not measured: {why}"))
        if ex.rows_after_stop:
            rows.append((label, row))
        else:
            report(label, row)
    try:
        with ServerProcess(turn.server, opts, cpus=r.server_cpus, netns=r.netns) as srv:
            at = Serving(turn, repeat, srv)
            try:
                with ex.alongside(r, at) as beside:
                    at.alongside = beside
                    ex.verify(r, at)
                    while pending:
                        point = pending[0]
                        server_lost = server_lost or srv.lost()  # before each point: still alive, still listening?
                        lost = lost or server_lost
                        if lost:
                            unmeasured(at, pending.pop(0), lost)
                            continue
                        done += 1
                        label = f"[{done}/{total}] {turn.server.id:20s} {point.label():28s} rep {repeat}"
                        r.measured = None
                        pending.pop(0)
                        row, server_lost, fault = _measure(r, at, point)
                        if fault:  # the rest of the turn is not run: the server, or the connection, is gone
                            r.faults.append((turn.server.id, repeat, point.label(), fault))
                            lost = fault
                        if ex.rows_after_stop:
                            rows.append((label, row))
                        else:
                            report(label, row)
            except Exception:
                server_lost = server_lost or srv.lost()
                lost = lost or server_lost
                if not lost:
                    raise
                # what was beside the server, or its verification, failed because the server went: said as that, and
                # every point of the turn not measured yet is written as such
                r.progress(f"{turn.server.id} rep {repeat}: {lost}; its remaining points not measured")
                while pending:
                    unmeasured(at, pending.pop(0), lost)
            at.alongside = None
    except Unsupported as exc:
        r.unsupported[turn.server.id] = str(exc)
        r.progress(f"skip: {exc}")
        return done
    r.stops.append({"server": turn.server.id, "repeat": repeat, **turn.note, "argv": metadata.portable(srv.argv),
                    "exit_code": srv.exit_code, "time_wait_wait_s": round(waited, 1),
                    "cpu_accounting": srv.cpu_group.source if srv.cpu_group else "/proc",
                    **({"stderr_tail": metadata.portable_text(tail)} if (tail := srv.stderr_tail(800)) else {})})
    if server_lost:
        r.progress(f"{turn.server.id} rep {repeat}: lost ({server_lost}); the next turn starts a server of its own")
    elif lost:
        r.progress(f"{turn.server.id} rep {repeat}: {lost}; the next turn tries the client host again")
    elif srv.exit_code != 0:
        if ex.require_clean_exit:
            raise RuntimeError(f"{turn.server.id} exited {srv.exit_code} on SIGTERM (contract: 0): "
                               f"{srv.stderr_tail()}")
        r.progress(f"warning: {turn.server.id} exited {srv.exit_code} on SIGTERM (contract: 0)")
    if rows:
        ex.after_stop(r, at, [row for _, row in rows])
        for label, row in rows:
            report(label, row)
    return done
