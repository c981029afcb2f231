"""Command line: python -m iobench {list,run,battery,show}  (make bench DATASET=... wraps `run`)."""
from __future__ import annotations

import argparse
import dataclasses
import json
import signal
import sys

from . import manifest, plans
from .profiles import PROFILES


def _sigterm_as_interrupt(signum, frame):
    raise KeyboardInterrupt  # stop servers exactly as on Ctrl-C


def cmd_list(args) -> int:
    print("servers:")
    for s in manifest.SERVERS.values():
        print(f"  {s.id:22s} {s.lang:7s} {s.model}")
    print("datasets:")
    for p in plans.PLANS.values():
        print(f"  {p.dataset:22s} {len(p.servers)} servers x {len(p.points)} points: {p.description}")
    from . import echo
    print("echo servers (the Mina vs Netty chapter):")
    for e in echo.ECHO_SERVERS.values():
        print(f"  {e.id:22s} Java    {e.framework} {e.version} ({e.main_class})")
    for p in echo.PLANS.values():
        print(f"  {p.dataset:22s} {len(p.points)} points: {p.description}")
    return 0


def cmd_run(args) -> int:
    from . import echo
    from .bench import run_plan
    from .results import DatasetExists

    if args.dataset in echo.PLANS:  # the echo benchmarks have their own runner
        def run():
            return echo.run_echo_plan(echo.PLANS[args.dataset], args.profile, dest=args.dest,
                                      overwrite=args.overwrite, server_cpus=args.server_cpus,
                                      client_cpus=args.client_cpus)
    else:
        try:
            plan = plans.get(args.dataset)
        except KeyError:
            known = sorted(plans.PLANS) + sorted(echo.PLANS)
            print(f"error: unknown dataset {args.dataset!r}; known: {', '.join(known)}", file=sys.stderr)
            return 2
        if args.servers:
            plan = dataclasses.replace(plan, servers=tuple(args.servers))

        def run():
            return run_plan(plan, args.profile, dest=args.dest, overwrite=args.overwrite,
                            server_cpus=args.server_cpus, client_cpus=args.client_cpus,
                            with_battery=False if args.no_battery else None)
    try:
        path = run()
    except DatasetExists as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted: servers stopped, links removed, captured data untouched", file=sys.stderr)
        return 130
    print(path)
    return 0


def cmd_battery(args) -> int:
    from .battery import run_battery
    from .lifecycle import ServerProcess, Unsupported

    try:
        with ServerProcess(manifest.get(args.server), cpus=args.server_cpus) as srv:
            srv.verify()
            verdicts = run_battery("127.0.0.1", srv.port, args.cases)
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

    from .http import BODY, read_response, request_bytes
    from .lifecycle import ServerProcess
    from .manifest import ServerOptions

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


def cmd_show(args) -> int:
    from . import echo
    from .dataset import load
    from .profiles import DATA

    if args.dataset in echo.PLANS:
        _print_echo(echo.load(args.path or DATA / args.dataset))
        return 0
    ds = load(args.path or DATA / args.dataset)
    print(ds.describe())
    print(ds.summary().to_string(index=False))
    return 0


def _print_echo(ds) -> None:
    print(ds.describe())
    cols = ["experiment", "server", "link", "size", "repeats", "tps", "tps_min", "tps_max", "mb_per_s",
            "p99_ms", "stall_pct", "reads_per_msg", "errors"]
    s = ds.summary()
    print(s[cols].round(2).to_string(index=False))
    if s["variant"].ne("defaults").any():
        print("variants:", "; ".join(f"{v!r}" for v in s["variant"].unique()))


def cmd_obtain(args) -> int:
    """What a bash or Java page calls: replay data/<name>, or measure it (IOBENCH_PROFILE)."""
    from . import echo
    from .dataset import obtain

    if args.dataset in echo.PLANS:
        try:
            ds = echo.obtain(args.dataset)
        except FileNotFoundError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        _print_echo(ds)
        return 0
    try:
        ds = obtain(args.dataset)
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(ds.describe())
    cols = ["server", "tool", "mode", "connections", "work_ms", "repeats", "rps", "rps_min", "rps_max",
            "p99_ms", "cpu_us_per_req", "errors", "generator_bound"]
    print(ds.summary()[cols].round(2).to_string(index=False))
    return 0


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _sigterm_as_interrupt)
    # A shell starts background jobs with SIGINT ignored; `kill -INT` must still stop a run cleanly.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    ap = argparse.ArgumentParser(prog="iobench", description="The book's benchmark harness.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="servers and datasets").set_defaults(fn=cmd_list)

    run = sub.add_parser("run", help="measure a dataset")
    run.add_argument("dataset")
    run.add_argument("--profile", choices=sorted(PROFILES), default="smoke")
    run.add_argument("--servers", nargs="+", help="only these server ids")
    run.add_argument("--dest", help="write here instead of the profile's folder")
    run.add_argument("--overwrite", action="store_true", help="replace an existing dataset")
    run.add_argument("--server-cpus", default="0")
    run.add_argument("--client-cpus", default="1")
    run.add_argument("--no-battery", action="store_true")
    run.set_defaults(fn=cmd_run)

    bat = sub.add_parser("battery", help="run the conformance battery against one server")
    bat.add_argument("server")
    bat.add_argument("--cases", nargs="+")
    bat.add_argument("--server-cpus", default="0")
    bat.add_argument("--json", action="store_true")
    bat.set_defaults(fn=cmd_battery)

    probe = sub.add_parser("probe", help="N simultaneous requests with simulated work: overlapped or not?")
    probe.add_argument("server")
    probe.add_argument("--work-ms", type=float, default=200.0)
    probe.add_argument("--clients", type=int, default=20)
    probe.add_argument("--server-cpus", default="0")
    probe.set_defaults(fn=cmd_probe)

    show = sub.add_parser("show", help="summarise a captured dataset")
    show.add_argument("dataset", nargs="?", default="baselines")
    show.add_argument("--path")
    show.set_defaults(fn=cmd_show)

    obt = sub.add_parser("obtain", help="replay a dataset, or measure it under IOBENCH_PROFILE=smoke|full")
    obt.add_argument("dataset")
    obt.set_defaults(fn=cmd_obtain)

    args = ap.parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
