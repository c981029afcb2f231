"""Command line: code/bin/iobench COMMAND (or python -m iobench from code/).

    list                     the servers and datasets the harness knows
    serve ID [--work-ms N]   start one server in the foreground (READY line; Ctrl-C stops it)
    run DATASET --profile P  measure a dataset (make bench DATASET=... wraps it)
    show DATASET             summarise a captured dataset
    obtain DATASET           replay it, or measure it under IOBENCH_PROFILE=smoke|full (bash and Java pages)
    mine [--only PAGE]       every results page's datasets on this machine, into a folder of your own
    contribute [--from DIR]  check that run for completeness and pack it under data/machines/ for the book
    battery ID               the conformance battery against one server
    probe ID                 N simultaneous requests with simulated work: overlapped or not?

Every argument is checked before anything starts: a mistake prints one line (error: ...) and exits 2, with no
server started and nothing written. A server that refuses to start says why in its own words (exit 2); any other
failure prints what failed and where its partial output is (exit 1). --debug shows the traceback instead.
"""
from __future__ import annotations

import argparse
import ipaddress
import json
import os
import signal
import sys
from pathlib import Path

from iobench import registry
from iobench.book.mine import PAGES
from iobench.run.profiles import DATA, PROFILES
from iobench.servers import manifest



def _sigterm_as_interrupt(signum, frame):
    raise KeyboardInterrupt  # stop servers exactly as on Ctrl-C


def cmd_list(args) -> int:
    plans = registry.every().values()
    w = max(len(name) for name in [*manifest.SERVERS, *manifest.ECHO_SERVERS, *(p.dataset for p in plans)])
    print("servers:")
    for s in manifest.SERVERS.values():
        print(f"  {s.id:{w}s} {s.lang:7s} {s.model}")
    for e in manifest.ECHO_SERVERS.values():
        print(f"  {e.id:{w}s} Java    echo server: {e.framework} {e.version} ({e.main_class})")
    print("datasets:")
    for p in plans:
        servers = f"{len(p.servers)} servers x " if hasattr(p, "servers") else ""
        print(f"  {p.dataset:{w}s} {servers}{len(p.points)} points: {p.description}")
    return 0


def cmd_run(args) -> int:
    from iobench.load.drivers import programs
    from iobench.run.hosts import HostError
    from iobench.run.results import DatasetExists
    from iobench.run.runner import RunFailed, run

    try:
        experiment = registry.experiment(args.dataset, servers=args.servers,
                                         with_battery=False if args.no_battery else None)
    except KeyError as exc:
        raise Mistake(exc.args[0]) from None
    tools = [t for t in (getattr(p, "tool", None) for p in experiment.points(args.profile)) if t]
    if args.server_host is not None:
        return run_on_server_host(args, experiment, programs(tools))
    client_host = args.client_host
    if args.client_agent is not None:  # started by run_on_server_host over SSH: its machine is the client
        client_host = agent_host(args.client_agent)
    if args.server_address and client_host is None:
        raise Mistake("--server-address: only with --client-host or --server-host (alone, servers listen on loopback)")
    check_here(args.server_cpus, "--server-cpus")
    if client_host is None:  # the client's machine checks its own (hosts.facts)
        check_here(args.client_cpus, "--client-cpus")
    try:
        path = run(experiment, args.profile, dest=args.dest, overwrite=args.overwrite,
                   server_cpus=args.server_cpus, client_cpus=args.client_cpus, client_host=client_host,
                   client_programs=programs(tools), server_address=args.server_address)
    except (DatasetExists, HostError) as exc:  # refused before anything started
        raise Mistake(str(exc)) from None
    except RunFailed as exc:  # every point tried; the lines above name each failed one
        print(f"error: {exc}; output kept in {exc.kept}, the dataset untouched", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted: servers stopped, links removed, captured data untouched", file=sys.stderr)
        return 130
    print(path)
    return 0


def check_here(cpus: str | None, flag: str) -> None:
    """A CPU list this machine must have (the run's other machine checks its own)."""
    from iobench.run.runner import check_cpus
    try:
        check_cpus(cpus, flag)
    except ValueError as exc:
        raise Mistake(str(exc)) from None


def agent_host(port: int):
    """The machine whose SSH session started this run (--server-host there) as the client host: the token its Agent
    wants comes first on stdin; stdin's end (that machine gone, or Ctrl-C there) stops this run as Ctrl-C would."""
    import os
    import threading

    from iobench.run.hosts import Host
    token = b""
    while not token.endswith(b"\n") and (byte := os.read(0, 1)):  # the raw descriptor: no buffer, no lock at exit
        token += byte

    def lifeline() -> None:
        try:
            while os.read(0, 4096):
                pass
        except OSError:
            pass
        os.kill(os.getpid(), signal.SIGINT)
    threading.Thread(target=lifeline, daemon=True).start()
    return Host(agent=(port, token.decode().strip()))


def run_on_server_host(args, experiment, programs: list[str]) -> int:
    """`iobench run --server-host H`: the run on H (hosts.run_there), this machine its client, which starts only the
    generators the run's points name; the dataset comes back to --dest (or the profile's folder) here, refused here
    first if the run may not write there."""
    from types import SimpleNamespace

    from iobench.run import profiles
    from iobench.run.hosts import HostError, run_there
    from iobench.run.results import DatasetExists, check_destination

    if args.client_host is not None:
        raise Mistake("--server-host and --client-host: with --server-host this machine is the client")
    check_here(args.client_cpus, "--client-cpus")  # --server-cpus is checked on the server's machine
    why = experiment.across_hosts(SimpleNamespace(points=experiment.points(args.profile)))
    if why:
        raise Mistake(f"{args.dataset} cannot put its load on another machine: {why}")
    dest = Path(args.dest).expanduser().resolve() if args.dest else profiles.PROFILES[args.profile].dest(args.dataset)
    try:
        check_destination(dest, profiles.DATA, scratch=args.profile != "full", overwrite=args.overwrite)
    except DatasetExists as exc:
        raise Mistake(str(exc)) from None
    forwarded = [args.dataset, "--profile", args.profile, "--server-cpus", args.server_cpus or "",
                 "--client-cpus", args.client_cpus or ""]
    forwarded += (["--servers", *args.servers] if args.servers else []) + (["--no-battery"] if args.no_battery else [])
    forwarded += ["--server-address", args.server_address] if args.server_address else []
    try:
        code, came, there = run_there(args.server_host, forwarded, dest, args.overwrite or args.profile != "full",
                                      programs)
    except HostError as exc:
        raise Mistake(str(exc)) from None
    except KeyboardInterrupt:
        print(f"interrupted: the run on {args.server_host.dest} stopped, nothing kept there", file=sys.stderr)
        return 130
    if code == 0:
        print(came)
        return 0
    how = "its SSH connection failed or dropped" if code == 255 else f"it exited {code}"
    print(f"error: the run on {args.server_host.dest} failed ({how})"
          + (f"; what it left came back to {came}" if came else
             f"; nothing came back (what it left, if anything, is in {there} there)"), file=sys.stderr)
    return code if code in (1, 2, 130) else 1


def serve_entry(server_id: str, workdir):
    """A manifest server by id; an echo server with its read statistics written into workdir."""
    if server_id in manifest.ECHO_SERVERS:
        from iobench.kinds.echo.experiment import server_entry
        return server_entry(manifest.ECHO_SERVERS[server_id], (), workdir / "reads.csv", None)
    return manifest.get(server_id)


def cmd_serve(args) -> int:
    """Start a server in the foreground as the harness starts it; stop it on Ctrl-C (or SIGTERM)."""
    import tempfile
    import time
    from pathlib import Path

    from iobench.run.lifecycle import ServerError, ServerProcess, StartError, Unsupported
    from iobench.servers.manifest import ServerOptions

    opts = ServerOptions(port=args.port, host=args.host, work_ms=args.work_ms, spin_us=args.spin_us,
                         pool=args.pool, backlog=args.backlog,
                         idle_timeout_s=args.idle_timeout_s)
    with tempfile.TemporaryDirectory(prefix="iobench-serve-") as tmp:
        server = serve_entry(args.server, Path(tmp))
        if args.db_cpus and getattr(server, "role", "") != "db":
            raise Mistake(f"--db-cpus: {server.id} has no database (the database servers: "
                          f"{', '.join(manifest.ids('C', role='db') + manifest.ids('Java', role='db'))})")
        srv = ServerProcess(server, opts, cpus=args.cpus, account_cpu=False, db_cpus=args.db_cpus or "same")
        try:
            with srv:
                srv.verify()
                print(f"READY port={srv.port}", flush=True)
                print(f"{server.id} ({server.model}) on {srv.url} as {' '.join(srv.argv)}\n"
                      "Ctrl-C stops it.", file=sys.stderr, flush=True)
                while srv.proc.poll() is None:
                    time.sleep(0.2)
                print(f"{server.id} exited by itself ({srv.proc.returncode}): {srv.stderr_tail()}",
                      file=sys.stderr)
                return 1
        except Unsupported as exc:
            print(f"skip: {exc}", file=sys.stderr)
            return 77
        except StartError:
            raise  # main() says it in the server's own words
        except ServerError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print(f"{server.id} stopped (exit {srv.exit_code})", file=sys.stderr)
            return 0 if srv.exit_code == 0 else 1


def cmd_battery(args) -> int:
    from iobench.run.lifecycle import ServerProcess, Unsupported
    from iobench.servers.battery import run_battery

    try:
        server = manifest.get(args.server)
        with ServerProcess(server, cpus=args.server_cpus) as srv:
            srv.verify()
            verdicts = run_battery("127.0.0.1", srv.port, args.cases, route=server.route)
    except Unsupported as exc:
        print(f"skip: {exc}", file=sys.stderr)
        return 77
    if args.json:
        print(json.dumps([v.as_dict() for v in verdicts], indent=2))
    else:
        for v in verdicts:
            print(f"{'PASS' if v.passed else 'FAIL'}  {v.case:24s} {v.detail}")
    failed = sum(not v.passed for v in verdicts)
    print(f"{len(verdicts) - failed} passed, {failed} failed")
    return 1 if failed else 0


def cmd_probe(args) -> int:
    """N clients send one request each at the same moment; how long until all are answered?
    A server that overlaps the work needs about one work time; one that serialises, N."""
    import concurrent.futures
    import socket
    import time

    from iobench.run.lifecycle import ServerProcess
    from iobench.servers.http import BODY, read_response, request_bytes
    from iobench.servers.manifest import ServerOptions

    def one(port: int) -> float:
        with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
            s.sendall(request_bytes("/", "HTTP/1.1", close=True))
            resp = read_response(s, bytearray(), time.monotonic() + 60)
        if resp.status != 200 or resp.body != BODY:
            raise RuntimeError(f"unexpected answer: {resp.status} {resp.body!r}")
        return time.monotonic()

    with ServerProcess(manifest.get(args.server), ServerOptions(work_ms=args.work_ms), cpus=args.server_cpus) as srv:
        srv.verify()
        with concurrent.futures.ThreadPoolExecutor(args.clients) as pool:
            t0 = time.monotonic()
            ends = list(pool.map(lambda _: one(srv.port), range(args.clients)))
    elapsed_ms = 1000 * (max(ends) - t0)
    print(f"{args.server}: {args.clients} clients x {args.work_ms:g} ms of work: all answered after "
          f"{elapsed_ms:,.0f} ms (all at once: {args.work_ms:g} ms; one at a time: "
          f"{args.clients * args.work_ms:,.0f} ms)")
    return 0


def cmd_mine(args) -> int:
    """Every results page's datasets (or one page's) measured on this machine into the reader's folder."""
    from iobench.book import mine

    dest = Path(args.dest).expanduser()
    if mine.folder_is_data(dest):
        raise Mistake(f"{dest} is the book's data/: a reader's runs go into a folder of their own")
    if args.plan:
        print(mine.plan_text(mine.plan(args.only), dest.resolve()))
        return 0
    outcome = mine.measure_all(dest, args.only, server_cpus=args.server_cpus, client_cpus=args.client_cpus)
    failed = [name for name, what in outcome if what.startswith("failed")]
    print(f"measured {sum(what == 'measured' for _, what in outcome)}, skipped "
          f"{sum(what.startswith('skipped') for _, what in outcome)}, failed {len(failed)}"
          f"{': ' + ', '.join(failed) if failed else ''}; build the book with IOBENCH_MINE={dest.resolve()}",
          file=sys.stderr)
    return 1 if failed else 0


def cmd_contribute(args) -> int:
    """Check a run of the reader's for completeness and pack it under data/machines/ for a pull request."""
    from iobench.book import machines
    from iobench.data.dataset import machine_name

    source = Path(args.source).expanduser()
    try:
        dest = machines.pack(source, Path(args.into), args.name)
    except machines.Incomplete as exc:
        raise Mistake(f"{source} cannot be contributed as it is:\n  " + str(exc).replace("\n", "\n  ")) from None
    except FileExistsError as exc:
        raise Mistake(str(exc)) from None
    manifest = json.loads((dest / machines.MANIFEST).read_text())
    here = Path.cwd().resolve()
    shown = dest.resolve().relative_to(here) if dest.resolve().is_relative_to(here) else dest
    print(f"packed {len(manifest['datasets'])} dataset{'s' if len(manifest['datasets']) != 1 else ''} measured on "
          f"{machine_name(manifest)} into {shown}\n"
          "the book's machines page reads it at the next build (make book); to give it to the book:\n"
          f"  git checkout -b machines-{dest.name} && git add {shown} && git commit -m 'machines: {dest.name}'\n"
          "  and open a pull request")
    return 0


def cmd_show(args) -> int:
    """Summarise data/<name> (or --path), or measure it first under IOBENCH_PROFILE (obtain)."""
    if args.path and not os.path.isdir(args.path):
        raise Mistake(f"--path {args.path}: no such folder")
    if args.cmd == "obtain":
        from iobench.run.profiles import current
        try:
            current()
        except ValueError as exc:
            raise Mistake(str(exc)) from None
    if not args.path and args.dataset not in registry.every():
        raise Mistake(f"unknown dataset {args.dataset!r}; known: {', '.join(registry.names())}")
    try:
        if args.path:
            ds = registry.reader(args.dataset)(args.path)
        else:
            ds = registry.obtain(args.dataset, profile=None if args.cmd == "obtain" else "replay")
    except FileNotFoundError as exc:  # a dataset not captured yet: not a mistake of the caller's
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(ds.describe())
    print(ds.table().to_string(index=False))
    return 0


class Mistake(Exception):
    """A mistake in the command line, found before anything started: one line, exit 2."""


class Parser(argparse.ArgumentParser):
    """argparse, with a mistake said in one line (error: ...) rather than the usage block, and exit 2."""

    def error(self, message: str):
        print(f"error: {self.prog}: {message} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(2)


def number(low: float, high: float, kind: type = float):
    """An argparse type: a number of `kind` from low to high (the ranges the servers' own parsers take)."""
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or value != value or not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"wants {'a whole number' if kind is int else 'a number'} from {low:g} to {high:g}, not {text!r}")
        return value
    parse.__name__ = "whole number" if kind is int else "number"
    return parse


def cpu_list(text: str) -> str:
    """An argparse type: a taskset CPU list of CPUs this machine has online for this process."""
    from iobench.run.runner import check_cpus
    try:
        check_cpus(text, "")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).strip()) from None
    return text


def cpu_syntax(text: str) -> str:
    """An argparse type: a taskset CPU list, whichever machine it is for (`run` checks it on that machine)."""
    from iobench.run.runner import cpu_list as cpus
    try:
        cpus(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).strip()) from None
    return text


def address(text: str) -> str:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"wants an IP address (127.0.0.1, ::1), not {text!r}") from None
    return text


def ssh_host(text: str):
    """An SSH destination, [user@]host[:/path/of/the/checkout] (hosts.Host.parse)."""
    from iobench.run.hosts import Host
    try:
        return Host.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def server_id(text: str) -> str:
    """An argparse type: the id of a server the harness can start (iobench list)."""
    if text in manifest.SERVERS or text in manifest.ECHO_SERVERS:
        return text
    raise argparse.ArgumentTypeError(f"unknown server id {text!r}; iobench list shows every id")


def http_server_id(text: str) -> str:
    """A server that answers the HTTP contract (the battery's and the probe's): no echo server."""
    if text in manifest.ECHO_SERVERS:
        raise argparse.ArgumentTypeError(f"{text} is an echo server: it answers no HTTP request")
    return server_id(text)


def dataset_name(text: str) -> str:
    if text in registry.every():
        return text
    raise argparse.ArgumentTypeError(f"unknown dataset {text!r}; known: {', '.join(registry.names())}")


def battery_case(text: str) -> str:
    from iobench.servers.battery import CASES
    names = [name for name, _ in CASES]
    if text in names:
        return text
    raise argparse.ArgumentTypeError(f"unknown case {text!r}; cases: {', '.join(names)}")


def _arg(*flags: str, **options) -> tuple[tuple[str, ...], dict]:
    return flags, options


SERVER = _arg("server", type=server_id, help="a server id (iobench list)")
HTTP_SERVER = _arg("server", type=http_server_id, help="a server id (iobench list)")
SERVER_CPUS = _arg("--server-cpus", type=cpu_list, default="0", help="taskset CPU list of the server")
# The ranges the servers' own option parsers take (code/c/common/server.c, iom.common.Options).
WORK_MS = number(0, 60_000)
# name, function, help, arguments: the command line's table of contents
COMMANDS = [
    ("list", cmd_list, "servers and datasets", []),
    ("serve", cmd_serve, "start one server in the foreground; Ctrl-C stops it", [
        SERVER,
        _arg("--port", type=number(0, 65535, int), default=0,
             help="0 (default): any free port, printed as READY port=N"),
        _arg("--host", type=address, default="127.0.0.1"),
        _arg("--work-ms", type=WORK_MS, default=0.0, help="simulated blocking work per request"),
        _arg("--spin-us", type=number(0, 60e6), default=0.0, help="simulated CPU work per request"),
        _arg("--pool", type=number(1, 100_000, int), help="pool size, where the model has one"),
        _arg("--backlog", type=number(1, 1 << 20, int), help="listen backlog, where the server takes one"),
        _arg("--idle-timeout-s", type=number(0, 1e6),
             help="drop a connection silent this long (0: never); default: the server's own"),
        _arg("--cpus", type=cpu_list, help="taskset CPU list (default: not pinned)"),
        _arg("--db-cpus", type=cpu_list,
             help="a database server's own PostgreSQL: taskset CPU list (default: the server's --cpus)")]),
    ("run", cmd_run, "measure a dataset", [
        _arg("dataset", type=dataset_name),
        _arg("--profile", choices=sorted(PROFILES), default="smoke"),
        _arg("--servers", nargs="+", help="only these server ids (of the dataset's)"),
        _arg("--dest", help="write here instead of the profile's folder (a smoke run: never inside data/)"),
        _arg("--overwrite", action="store_true", help="replace an existing dataset"),
        _arg("--server-cpus", type=cpu_syntax, default="0",
             help="taskset CPU list of the server (on its machine: with --server-host, that one)"),
        _arg("--client-cpus", type=cpu_syntax, default="1",
             help="taskset CPU list of the load generator (on its machine: with --client-host, that one)"),
        _arg("--client-host", type=ssh_host, metavar="[USER@]HOST[:PATH]",
             help="run the load generators on this SSH destination (the project checked out and built at PATH "
                  "there, default this checkout's path); the servers listen on the address it reaches this "
                  "machine at (README: Measure across two machines)"),
        _arg("--server-host", type=ssh_host, metavar="[USER@]HOST[:PATH]",
             help="run the servers (and the harness) on this SSH destination, the load generators here; the "
                  "dataset comes back here (README: Measure across two machines)"),
        _arg("--server-address", type=address,
             help="with --client-host or --server-host: the address the servers listen on and the load goes to "
                  "(default: the one SSH used; behind NAT, or with more than one network, give the one the client's "
                  "machine reaches the server's at)"),
        _arg("--client-agent", type=number(1, 65535, int), help=argparse.SUPPRESS),
        _arg("--no-battery", action="store_true")]),
    ("battery", cmd_battery, "run the conformance battery against one server", [
        HTTP_SERVER, _arg("--cases", nargs="+", type=battery_case), SERVER_CPUS, _arg("--json", action="store_true")]),
    ("probe", cmd_probe, "N simultaneous requests with simulated work: overlapped or not?", [
        HTTP_SERVER, _arg("--work-ms", type=WORK_MS, default=200.0),
        _arg("--clients", type=number(1, 1000, int), default=20), SERVER_CPUS]),
    ("mine", cmd_mine, "measure every results page's datasets on this machine, into a folder of your own", [
        _arg("--dest", default="~/iom-runs", help="the folder (default ~/iom-runs; never inside data/)"),
        _arg("--only", choices=list(PAGES), metavar="PAGE", help="one page's datasets: " + ", ".join(PAGES)),
        _arg("--plan", action="store_true", help="print the plan and its time, measure nothing"),
        SERVER_CPUS,
        _arg("--client-cpus", type=cpu_list, default="1", help="taskset CPU list of the load generator")]),
    ("contribute", cmd_contribute, "check a run of yours for completeness and pack it under data/machines/", [
        _arg("--from", dest="source", default="~/iom-runs", help="the run's folder (default ~/iom-runs)"),
        _arg("--name", help="the contribution's folder name (default: the CPU, its cores and the day)"),
        _arg("--into", default=str(DATA / "machines"), help=argparse.SUPPRESS)]),
    ("show", cmd_show, "summarise a captured dataset", [
        _arg("dataset", nargs="?", default="baselines"), _arg("--path")]),
    ("obtain", cmd_show, "replay a dataset, or measure it under IOBENCH_PROFILE=smoke|full", [
        _arg("dataset", type=dataset_name), _arg("--path", help=argparse.SUPPRESS)]),
]


def parser() -> Parser:
    ap = Parser(prog="iobench", description="The book's benchmark harness.")
    ap.add_argument("--debug", action="store_true", help="a failure shows its Python traceback")
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    for name, fn, help_, arguments in COMMANDS:
        cmd = sub.add_parser(name, help=help_)
        for flags, options in arguments:
            cmd.add_argument(*flags, **options)
        cmd.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        cmd.set_defaults(fn=fn)
    return ap


def main(argv: list[str] | None = None) -> int:
    from iobench.run.lifecycle import StartError

    signal.signal(signal.SIGTERM, _sigterm_as_interrupt)
    # A shell starts background jobs with SIGINT ignored; `kill -INT` must still stop a run cleanly.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    args = parser().parse_args(argv)
    try:
        return args.fn(args)
    except Mistake as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except StartError as exc:
        if args.debug:
            raise
        print(f"error: {exc.server_id} refused to start: {exc.said or str(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: servers stopped", file=sys.stderr)
        return 130
    except Exception as exc:
        if args.debug:
            raise
        print(f"error: iobench {args.cmd} failed: {exc.__class__.__name__}: {exc} "
              "(what it kept, if anything, is named above; --debug shows the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
