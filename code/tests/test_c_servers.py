"""What only the C side shows: the event loops' deadline list, the request parser under
fuzzing, and the CPU of c-fork's exited children. The contract every C server follows, optimised
and under the sanitizers, is tested once for C and Java alike in test_contract.py."""
import os
import shutil
import subprocess
import sys
import time

import pytest

from iobench.load import drivers
from iobench.run.lifecycle import ServerProcess
from iobench.run.sampler import GroupSampler
from iobench.servers.manifest import C_BUILD, CODE, ROOT, get


@pytest.fixture(scope="module")
def built():
    subprocess.run(["make", "-s", "-C", str(CODE / "c"), "all"], check=True)


def test_c_unit_tests():
    """code/c/tests, under ASan and UBSan: the event loops' deadline list (common/timers.c), and
    each reactor backend going round the ready descriptors when one call takes fewer."""
    run = subprocess.run(["make", "-s", "-C", str(CODE / "c"), "check"], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "test_timers: all checks passed" in run.stdout
    for backend in ("select", "poll", "epoll"):
        assert f"test_reactor ({backend}): all checks passed" in run.stdout


def test_fuzz_request_parser(tmp_path):
    subprocess.run(["make", "-s", "-C", str(CODE / "c"), "fuzz"], check=True)
    corpus = tmp_path / "corpus"  # libFuzzer adds what it finds to its first corpus folder
    shutil.copytree(CODE / "c" / "fuzz" / "corpus", corpus)
    run = subprocess.run([str(C_BUILD / "fuzz_http"), "-max_total_time=20", "-seed=1",
                          "-max_len=9000", "-print_final_stats=1", str(corpus)],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Done" in run.stderr and "ERROR" not in run.stderr


@pytest.mark.parametrize("connections, accounting", [
    (10, "cgroup"), (1000, "cgroup"), (10, "proc"),
    pytest.param(1000, "proc", marks=pytest.mark.xfail(
        reason="known limit of /proc: with 1000 children exiting at once, a child reaped while /proc "
               "is read can be missed; the cgroup account (the default where cgroups are writable) "
               "has no such gap", strict=False))])
def test_cpu_of_exited_children_is_counted(built, connections, accounting):
    """c-fork's children exit when their client leaves; their CPU time must still be charged,
    also when the parent is reaping hundreds of them while the harness reads /proc."""
    with ServerProcess(get("c-fork"), cpus="0", account_cpu=(accounting == "cgroup")) as srv:
        if accounting == "cgroup" and srv.cpu_group is None:
            pytest.skip("no writable cgroup file system here (not root?)")
        sampling = GroupSampler(srv.pid, cpu_group=srv.cpu_group).start()
        spec = drivers.LoadSpec("wrk", connections, keepalive=True, duration_s=1.0)
        wrk = drivers.get("wrk")
        run = subprocess.run(["taskset", "-c", "1"] + wrk.argv(spec, srv.url), env=os.environ | wrk.env(spec),
                             cwd=ROOT, capture_output=True, text=True, timeout=30)
        usage = sampling.stop()
        group = srv.cpu_group
    result = wrk.parse(run.stdout, run.returncode)
    assert result.ok and result.requests > 1000
    assert usage.cpu_s / result.requests > 2e-6, f"{1e6 * usage.cpu_s / result.requests:.2f} µs per request"
    if group is not None:
        assert not group.path.exists(), "the server's cgroup outlived it"


def test_cgroup_counts_cpu_of_a_child_that_already_exited(tmp_path):
    """The kernel's account keeps a child's CPU time after the child is gone and reaped."""
    from iobench.run.cgroup import CpuGroup
    group = CpuGroup.create("test")
    if group is None:
        pytest.skip("no writable cgroup file system here (not root?)")
    try:
        script = "import os,time\nt=time.process_time()\nwhile time.process_time()-t<0.3: pass\n"
        parent = ("import os,subprocess,sys\n"
                  f"subprocess.run([sys.executable,'-c',{script!r}],check=True)\n")
        subprocess.run([sys.executable, "-c", parent], check=True, preexec_fn=group.join)
        assert group.pids() == []
        assert 0.3 <= group.usage_s() < 2.0, group.usage_s()
    finally:
        group.remove()
    assert not group.path.exists()


def test_cgroup_splits_cpu_into_user_and_kernel_time():
    """A loop in user space is charged to user_usec, a loop of system calls mostly to system_usec: the split
    the keep-alive experiment reads (a reply's write and a connection's close are kernel time)."""
    from iobench.run.cgroup import CpuGroup
    group = CpuGroup.create("test")
    if group is None:
        pytest.skip("no writable cgroup file system here (not root?)")
    try:
        # 0.4 s of CPU in user space however fast the machine runs Python (a fixed 12 million turns took 0.23 s
        # of CPU in one run here and 0.5 s in another); the clock is read once per million turns: a few system calls
        spin = ("import time\nt = time.process_time()\nwhile time.process_time() - t < 0.4:\n"
                "    for i in range(1_000_000): pass\n")
        subprocess.run([sys.executable, "-c", spin], check=True, preexec_fn=group.join)
        total, user, system = group.split_s()
        assert user >= 0.3 and system < 0.5 * user, (total, user, system)
        calls = ("import os,time\nfd=os.open('/dev/zero',os.O_RDONLY)\nt=time.process_time()\n"
                 "while time.process_time()-t<0.6: os.read(fd,1<<20)\n")
        subprocess.run([sys.executable, "-c", calls], check=True, preexec_fn=group.join)
        total2, user2, system2 = group.split_s()
        assert system2 - system > user2 - user and system2 - system > 0.2, (user2 - user, system2 - system)
        assert total2 == pytest.approx(user2 + system2, rel=0.1, abs=0.05)  # v1: sampled at each tick
    finally:
        group.remove()


def test_the_cpu_a_server_spends_after_the_window_is_not_charged_to_it():
    """A server still busy once the load stopped (a JVM compiling) is not charged for it: the cgroup is read when
    the window ends. (Read after the group had settled, a busy process was charged up to 3 s more: 7.5 s of
    CPU in a 5 s window, rpc-tail of 2026-11-26.)"""
    from iobench.run.cgroup import CpuGroup
    group = CpuGroup.create("test")
    if group is None:
        pytest.skip("no writable cgroup file system here (not root?)")
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=group.join,
                            start_new_session=True)
    try:
        time.sleep(0.3)
        sampling = GroupSampler(busy.pid, cpu_group=group).start()
        time.sleep(0.5)
        usage = sampling.stop()
        assert usage.cpu_s <= 1.2 * usage.wall_s + 0.05, (usage.cpu_s, usage.wall_s)
        assert usage.cpu_s >= 0.3 * usage.wall_s  # it did run (one core at most, less on a busy host)
    finally:
        busy.kill()
        busy.wait()
        group.remove()


def test_softirq_and_stolen_time_are_read_per_core():
    """/proc/stat's softirq and steal columns, summed over the cores asked for: never more than over every core."""
    from iobench.run import sampler
    every = sampler.core_s(",".join(str(c) for c in range(os.cpu_count())))
    one = sampler.core_s("0")
    for k in ("softirq", "steal"):
        assert 0 <= one[k] <= every[k]
        assert sampler.core_s(None)[k] <= every[k] + 0.05
