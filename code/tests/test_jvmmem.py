"""A JVM's memory by what holds it (run/jvmmem.py): the heap after a full collection and Native Memory Tracking's
categories, read from a running server, and the plan that reads them at every idle level."""
import socket
import time

import pytest

from iobench import registry
from iobench.run import jvmmem
from iobench.run.lifecycle import ServerProcess
from iobench.servers import manifest
from iobench.servers.manifest import ServerOptions


def test_an_answer_without_native_memory_tracking_is_refused_with_the_flag_named():
    without = " garbage-first heap   total reserved 524288K, committed 524288K, used 4096K [0x0, 0x0)\n" \
              "Native memory tracking is not enabled\n"
    with pytest.raises(jvmmem.JvmMemoryUnavailable, match="NativeMemoryTracking=summary"):
        jvmmem.parse(without)


def _held(srv: ServerProcess, n: int) -> list[socket.socket]:
    """n connections the server accepted and that never send a byte."""
    return [socket.create_connection(("127.0.0.1", srv.port)) for _ in range(n)]


def _read(srv: ServerProcess, tmp_path, name: str, settle: int) -> dict:
    deadline = time.monotonic() + 20
    while True:  # until the server has taken every connection (a thread each, or a registration)
        got = jvmmem.read(srv.pid, manifest.java_home(), tmp_path / f"{name}.txt")
        if got["threads"] >= settle or time.monotonic() > deadline:
            return got
        time.sleep(0.2)


@pytest.mark.parametrize("server_id", ["java-thread", "java-vthread"])
def test_idle_connections_show_as_platform_stacks_or_as_live_heap(server_id, tmp_path):
    """A thread per connection holds each idle connection in a platform thread (NMT's Thread count and its
    stacks grow); a virtual thread per connection holds it on the heap (the parked thread's stack chunk), with
    no new platform thread."""
    n = 300
    opts = ServerOptions(idle_timeout_s=0, jvm=jvmmem.FLAGS)
    with ServerProcess(manifest.get(server_id), opts, cpus=None) as srv:
        srv.verify()
        before = _read(srv, tmp_path, "before", 0)
        conns = _held(srv, n)
        try:
            after = _read(srv, tmp_path, "after", before["threads"] + n if server_id == "java-thread" else 0)
        finally:
            for c in conns:
                c.close()
    assert (tmp_path / "after.txt").read_text().startswith("$ ")  # jcmd's output kept, its command first
    grew_threads = after["threads"] - before["threads"]
    if server_id == "java-thread":
        assert grew_threads >= n
        assert after["stack_kib"] - before["stack_kib"] >= n * 4  # at least a page of stack each
    else:
        assert grew_threads < n / 10
        assert after["heap_live_kib"] - before["heap_live_kib"] >= n * 0.25  # their stack chunks and sockets
    for got in (before, after):
        assert got["categories"]["Java Heap"] == 512 * 1024  # -Xms512m -Xmx512m: committed whole from the start
        assert 0 < got["heap_live_kib"] < got["categories"]["Java Heap"]
        assert got["committed_kib"] > sum(v for k, v in got["categories"].items() if k != "Java Heap") / 2


def test_the_plan_starts_its_java_servers_tracked_and_reads_them_at_every_level():
    exp = registry.experiment("jvm-memory")
    assert set(jvmmem.COLUMNS) <= set(exp.columns)
    assert not set(jvmmem.COLUMNS) & set(registry.experiment("idle-connections").columns or [])

    class _Run:
        class profile:
            name = "full"
    turns = list(exp.turns(_Run, exp.points("full"), 1))
    assert turns and all(set(jvmmem.FLAGS) <= set(u.opts.jvm) for u in turns)
    assert {u.server.lang for u in turns} == {"Java"}
    assert len({p.idle_conns for u in turns for p in u.points}) >= 4  # slopes between levels, not a total over N


def test_the_event_loop_plan_starts_each_setting_tracked_in_a_process_of_its_own():
    from iobench.kinds.rpc.plans import WRITEUP_LOOPS

    exp = registry.experiment("rpc-loops")
    assert set(jvmmem.COLUMNS) <= set(exp.columns)
    turns = exp._turns(exp.points("full"), "full")
    assert len(turns) == 2  # Netty's default, and the write-up's 3,000 loops
    for u in turns:
        assert set(jvmmem.FLAGS) <= set(u.opts.jvm)
    assert [WRITEUP_LOOPS in u.opts.jvm for u in turns] == [False, True]
    assert {p.loop for u in turns for p in u.points} == {"closed", "open"}
