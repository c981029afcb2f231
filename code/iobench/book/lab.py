"""What the chapters' exercise cells share: a server pinned as the harness pins it, the
book's closed-loop generator against it, and the server's CPU time over a run. Each cell
runs in seconds on a stock machine; the file limit is raised as far as this process may.

    with lab.server("c-epoll", work_ms=20) as srv, lab.cpu_of(srv) as used:
        run = lab.closed_loop(srv.port, connections=100, seconds=2)
    run["achieved_rps"], used.us_per(run["ok"])
"""
from __future__ import annotations

import contextlib
import os
import subprocess
from dataclasses import dataclass

from iobench.load.drivers import summary_line
from iobench.run import limits, sampler
from iobench.run.lifecycle import ServerProcess
from iobench.servers.manifest import C_BUILD, ROOT, ServerOptions, get

TWO_CORES = (os.cpu_count() or 1) >= 2
SERVER_CPUS, LOAD_PREFIX = ("0", ["taskset", "-c", "1"]) if TWO_CORES else (None, [])


def server(server_id: str, **options) -> ServerProcess:
    """A manifest server on CPU 0 (where there are two), started by `with`; options as ServerOptions'."""
    limits.raise_nofile()
    return ServerProcess(get(server_id), ServerOptions(**options), cpus=SERVER_CPUS)


def closed_loop(port: int, connections: int, seconds: float, timeout_s: float = 5, pipeline: int = 1,
                close: bool = False, path: str = "/") -> dict:
    """iom-openloop --closed against 127.0.0.1:port, on CPU 1: its OPENLOOP line as a dict
    (achieved_rps, ok, p50_ms, p99_ms, conns_served, ...). close: a new connection per request;
    path: what it GETs (an RPC provider answers its call on manifest.RPC_ROUTE.path)."""
    limits.raise_nofile()
    argv = LOAD_PREFIX + [str(C_BUILD / "iom-openloop"), "--closed", "--connections", str(connections),
                          "--pipeline", str(pipeline), "--duration", f"{seconds:g}", "--timeout", f"{timeout_s:g}",
                          *(["--close"] if close else []), f"http://127.0.0.1:{port}{path}"]
    out = subprocess.run(argv, capture_output=True, text=True)
    line = summary_line(out.stdout, "OPENLOOP")
    if line is None:
        raise RuntimeError(f"iom-openloop printed no OPENLOOP line (exit {out.returncode}): {out.stderr[-400:]}")
    return line


def client_load(port: int, client: str, seconds: float, warmup_s: float = 3.0, **spec) -> dict:
    """One Java HTTP client (iom.clients.OpenLoad, book/clients) against 127.0.0.1:port, on CPU 1:
    its CLIENTLOAD line as a dict (offered, ok, dropped, p99_ms, cpu_us_per_req, ...). `spec`: the
    LoadSpec fields of a clientload run, e.g. rate=1000, connections=16, max_in_flight=64, or shipped=True."""
    from iobench.load.drivers import LoadSpec, get as driver

    limits.raise_nofile()
    spec = LoadSpec(**{"tool": "clientload", "client": client, "connections": 0, "duration_s": seconds,
                       "warmup_s": warmup_s,
                       "max_in_flight": 10_000, **spec})
    out = subprocess.run(LOAD_PREFIX + driver("clientload").argv(spec, f"http://127.0.0.1:{port}/"),
                         capture_output=True, text=True, cwd=ROOT)
    line = summary_line(out.stdout, "CLIENTLOAD")
    if line is None:
        raise RuntimeError(f"OpenLoad printed no CLIENTLOAD line (exit {out.returncode}): {out.stderr[-400:]}")
    return line


@dataclass
class CpuUsed:
    """A server's CPU seconds (every process and thread of its group) over a `with` block."""
    seconds: float = 0.0

    def us_per(self, requests: int) -> float:
        return 1e6 * self.seconds / requests if requests else float("nan")


@contextlib.contextmanager
def cpu_of(srv: ServerProcess):
    used = CpuUsed()
    before = sampler.group_snapshot(srv.pid).cpu_s
    try:
        yield used
    finally:
        used.seconds = sampler.group_snapshot(srv.pid).cpu_s - before
