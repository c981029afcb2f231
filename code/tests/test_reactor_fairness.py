"""The event loops are fair: with more sockets ready than one wait takes (servers/reactor.c
takes MAX_EVENTS, 512), every busy keep-alive connection is still answered, about as often
as the others. A poll or select backend that scans from its first descriptor on every call
serves the low ones on every call and the high ones seldom or never (c-poll at 10,000 busy
connections had answered 5,877 of them); epoll_wait goes round the ready ones by itself.

A closed loop (iom-openloop --closed): each connection sends its next request as soon as
its answer comes, so hundreds are ready at once, and an answered one is ready again by the
next wait. The sanitizer builds of the two backends with a cursor run the same load."""
import dataclasses
import json
import resource
import subprocess

import pytest

from iobench.run.lifecycle import ServerProcess
from iobench.servers.manifest import C_BUILD, CODE, contract_argv, get

OPENLOOP = C_BUILD / "iom-openloop"
DURATION_S = 2
SPARE_FDS = 64  # beyond one per connection: stdio, the listening socket, epoll, ASan's files
# c-select stays below its FD_SETSIZE (1024) limit; the others take twice that many
CASES = [("c-poll", "opt", 2000), ("c-select", "opt", 1000), ("c-epoll", "opt", 2000),
         ("c-poll", "asan", 2000), ("c-select", "asan", 1000)]
FAIR = 0.75  # the fewest answers on a connection, as a fraction of the median (fair: > 0.9)


@pytest.fixture(scope="module")
def built():
    subprocess.run(["make", "-s", "-C", str(CODE / "c"), "all", "asan"], check=True)


@pytest.fixture
def many_fds():
    """The soft descriptor limit raised to the hard one, for this process and the server
    and generator it starts (a stock machine's soft limit is 1,024)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    try:
        yield hard
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.fixture
def sanitizer_options(monkeypatch):
    monkeypatch.setenv("ASAN_OPTIONS", "halt_on_error=1:exitcode=66:detect_stack_use_after_return=0")
    monkeypatch.setenv("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1")


@pytest.mark.parametrize("server_id, build, connections", CASES, ids=lambda p: str(p))
def test_every_busy_connection_is_answered(built, many_fds, sanitizer_options, tmp_path, server_id, build,
                                           connections):
    if many_fds < connections + SPARE_FDS:
        pytest.skip(f"the hard limit on open files is {many_fds}; {connections} connections need "
                    f"{connections + SPARE_FDS} (raise it: ulimit -Hn, or nofile in limits.conf)")
    entry = get(server_id)
    if build == "asan":
        entry = dataclasses.replace(entry, argv=contract_argv(C_BUILD / "asan" / server_id))
    with ServerProcess(entry, cpus="0", log_dir=tmp_path) as srv:
        run = subprocess.run(["taskset", "-c", "1", str(OPENLOOP), "--closed", "--connections", str(connections),
                              "--duration", str(DURATION_S), srv.url],
                             capture_output=True, text=True, timeout=30)
    assert run.returncode == 0, run.stderr
    d = json.loads(next(ln for ln in run.stdout.splitlines() if ln.startswith("OPENLOOP "))[len("OPENLOOP "):])
    log = srv.log_path.read_text(errors="replace")
    assert srv.exit_code == 0 and log.strip() == "", f"{server_id} ({build}) exited {srv.exit_code}: {log[-3000:]}"
    spread = {k: d[k] for k in ("ok", "conns_served", "conn_min_requests", "conn_median_requests",
                                "conn_max_requests", "timeouts", "resets", "errors_connect")}
    assert d["timeouts"] == d["resets"] == d["errors_connect"] == 0, spread
    assert d["conns_served"] == connections, spread
    assert d["conn_min_requests"] >= FAIR * d["conn_median_requests"], spread
