"""A plan that counts system calls: the kernel's tracepoints count every call of the server's processes (threads
and children started during the load included) by kind, per answered request, with perf's output kept."""
import csv
import os
import signal
import subprocess
import sys

import pytest

from iobench import registry
from iobench.kinds.openloop.dataset import load
from iobench.kinds.openloop.plans import OpenPlan, OpenPoint
from iobench.run import probes, runner
from iobench.servers.manifest import CODE


def needs_perf():
    try:
        probes.syscall_tracepoints()
    except probes.ProbeUnavailable as exc:
        pytest.skip(f"no syscall counting here: {exc}")


def test_perf_s_csv_reads_as_counts_and_leaves_out_what_it_could_not_count():
    text = ("# started on Fri Nov 27 05:41:08 2026\n\n510,,raw_syscalls:sys_enter,11608426,100.00,,\n"
            "250,,syscalls:sys_enter_close,11608426,100.00,,\n<not counted>,,syscalls:sys_enter_futex,0,0.00,,\n")
    assert probes.parse_perf_stat(text) == {"raw_syscalls:sys_enter": 510, "syscalls:sys_enter_close": 250}


def test_the_probe_counts_a_group_s_calls_by_kind_children_started_later_included(tmp_path):
    needs_perf()
    script = ("import os, socket, sys, time\n"
              "sys.stdin.readline()\n"  # the probe is attached: go
              "for _ in range(200):\n    socket.socket().close()\n"
              "if os.fork() == 0:\n"  # a child started while counting: its calls are the group's too
              "    for _ in range(50):\n        os.close(os.open('/dev/null', os.O_RDONLY))\n    os._exit(0)\n"
              "os.wait()\nprint('done', flush=True)\ntime.sleep(5)\n")
    proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        probe = probes.SyscallProbe(proc.pid, tmp_path / "perf.txt")
        probe.start()
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert proc.stdout.readline() == "done\n"
        counts = probe.stop()
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert counts["close"] >= 250  # 200 sockets closed by the parent, 50 files by the child
    assert counts["total"] >= counts["close"] + 200  # and 200 socket() calls, counted only in the total
    assert counts["epoll_wait"] == 0 and counts["io_uring_enter"] == 0
    assert "syscalls:sys_enter_close" in (tmp_path / "perf.txt").read_text()  # perf's own output, kept


@pytest.fixture(scope="module")
def built():
    subprocess.run(["make", "-s", "-C", str(CODE / "c"), "all"], check=True)


@pytest.mark.live  # a measuring smoke run: make test-live (make test stays within 35 minutes)
def test_a_plan_that_counts_tells_the_models_apart_by_what_they_ask_of_the_kernel(built, tmp_path):
    needs_perf()
    point = OpenPoint("openloop", "open", 10, rate=500.0)
    plan = OpenPlan(dataset="tiny-syscalls", description="a test plan", servers=("c-epoll", "c-thread", "c-fork"),
                    points=(point,), smoke_points=(point,), measured_s=1.0, warmup_s=0.2, syscalls=True)
    path = runner.run(registry.experiment(plan), "smoke", dest=tmp_path / "sc", progress=lambda m: None)
    rows = {r["server"]: r for r in csv.DictReader(open(path / "results.csv"))}
    for sid, row in rows.items():
        assert row["ok_run"] == "True" and int(row["ok"]) > 0, row
        per = {k: float(v) for k, v in row.items() if k.startswith("sc_") or k == "syscalls_per_req"}
        # one answer is one write, whoever writes it (c-fork's children, started during the load, included)
        assert 0.9 <= per["sc_write_per_req"] <= 1.5, (sid, per)
        assert per["sc_read_per_req"] >= 0.9, (sid, per)
        assert per["syscalls_per_req"] >= sum(v for k, v in per.items() if k.startswith("sc_")) - 1e-9
        assert (path / row["syscalls_file"]).exists()
    # the reactor waits in epoll_wait; a thread or process per connection blocks in read() instead
    assert float(rows["c-epoll"]["sc_epoll_wait_per_req"]) > 0.1
    assert float(rows["c-thread"]["sc_epoll_wait_per_req"]) == 0 == float(rows["c-fork"]["sc_epoll_wait_per_req"])
    ds = load(path)
    assert ds.value("syscalls_per_req", server="c-epoll") == pytest.approx(float(rows["c-epoll"]["syscalls_per_req"]))


def test_only_a_plan_that_counts_has_the_columns():
    assert set(probes.SYSCALL_COLUMNS) <= set(registry.experiment("rpc-syscalls").columns)
    assert set(probes.SYSCALL_COLUMNS) <= set(registry.experiment("syscalls").columns)
    for name in ("rpc-provider", "open-loop"):  # its CPU columns are the models' CPU: no tracepoint on its calls
        assert not set(probes.SYSCALL_COLUMNS) & set(registry.experiment(name).columns)


def test_every_server_an_rpc_plan_names_is_measured_by_one_of_its_points():
    """A point measures only the servers it names (RpcPoint.servers, the four providers unless it says
    otherwise): a plan that lists a server none of its points names would not measure it, and its description
    would say more than its data (the first run of rpc-syscalls, 2026-11-27, measured the providers only)."""
    from iobench.kinds.rpc.plans import PLANS
    for plan in PLANS.values():
        named = {s for p in plan.points for s in p.servers}
        assert set(plan.servers) <= named, (plan.dataset, set(plan.servers) - named)
