"""Sampled stacks folded from perf's output, and each stack's path (run/kprofile.py, run/kpaths.py)."""
from collections import Counter

import pytest

from iobench.run import kpaths, kprofile
from iobench.run.kpaths import path_of

SENT = """\
c-epoll  4242/4242  [000]
\tffffffff9a0b0c1 copy_user_enhanced_fast_string+0x7 ([kernel.kallsyms])
\tffffffff9a0b0c2 _copy_from_iter+0x88 ([kernel.kallsyms])
\tffffffff9a0b0c3 tcp_sendmsg_locked+0x2f1 ([kernel.kallsyms])
\tffffffff9a0b0c4 tcp_sendmsg+0x28 ([kernel.kallsyms])
\tffffffff9a0b0c5 __sys_sendto+0x11b ([kernel.kallsyms])
\tffffffff9a0b0c6 do_syscall_64+0x5b ([kernel.kallsyms])
\tffffffff9a0b0c7 entry_SYSCALL_64_after_hwframe+0x6e ([kernel.kallsyms])
\t    7f12a3c4d5e6 __send+0x16 (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t    55d1e2f3a4b5 on_writable+0x45 (/srv/iom/code/c/build/c-epoll)

"""
SCRIPT = SENT + """\
c-epoll  4242/4242  [000]
\t    55d1e2f3a4b6 parse_request+0x12 (/srv/iom/code/c/build/c-epoll)

""" + SENT + """\
GC Thread#0  77/79  [000]
\t    7f0000001234 G1ParScanThreadState::trim_queue+0x10 (/usr/lib/jvm/temurin-25-jdk-amd64/lib/server/libjvm.so)

java-worker  77/78  [000]
\t    7f0000009999 [unknown] ([unknown])
"""


def test_fold_counts_each_distinct_stack_outermost_first():
    stacks = kprofile.fold(SCRIPT)
    sent = ("c-epoll;[c-epoll] on_writable;[libc.so.6] __send;entry_SYSCALL_64_after_hwframe_[k];do_syscall_64_[k];"
            "__sys_sendto_[k];tcp_sendmsg_[k];tcp_sendmsg_locked_[k];_copy_from_iter_[k];"
            "copy_user_enhanced_fast_string_[k]")
    assert stacks[sent] == 2
    assert stacks["c-epoll;[c-epoll] parse_request"] == 1
    assert stacks["GC_Thread#0;[libjvm.so] G1ParScanThreadState::trim_queue"] == 1
    assert stacks["java-worker;[unknown] [unknown]"] == 1
    assert sum(stacks.values()) == 5


TREE = """\
swapper     0/0     [000] PERF_RECORD_FORK(4242:4242):(1:1)
c-fork  4242/4242  [000] PERF_RECORD_FORK(4300:4300):(4242:4242)
c-fork  4300/4300  [000] PERF_RECORD_COMM: c-fork:4300/4300
bash  5000/5000  [000] PERF_RECORD_FORK(5001:5001):(5000:5000)
c-fork  4300/4300  [000]
\t    55d1e2f3a4b6 handle+0x12 (/srv/iom/code/c/build/c-fork)

c-fork  4242/4242  [000]
\t    55d1e2f3a4b6 accept_loop+0x12 (/srv/iom/code/c/build/c-fork)

bash  5001/5001  [000]
\t    55d1e2f3a4b6 main+0x12 (/usr/bin/bash)

swapper     0/0     [000]
\tffffffff821f236b pv_native_safe_halt ([kernel.kallsyms])
\tffffffff821f3e75 default_idle ([kernel.kallsyms])

swapper     0/0     [000]
\tffffffff821f236b pv_native_safe_halt ([kernel.kallsyms])
"""


def test_on_a_pinned_core_the_server_is_its_process_and_what_it_forked():
    stacks = kprofile.fold(TREE, root=4242)
    assert stacks == Counter({"c-fork;[c-fork] handle": 1, "c-fork;[c-fork] accept_loop": 1,
                              kpaths.OTHER_TASKS: 1, kpaths.IDLE: 2})
    by = kpaths.split(stacks)
    assert by["own code"] == 2 and by[kpaths.IDLE] == 2 and by[kpaths.OTHER_TASKS] == 1
    row = kpaths.columns(stacks, frequency=1000, answered=2)
    assert row["kp_samples"] == 2 and row["kp_own_code_us_per_req"] == pytest.approx(1000.0)
    assert row["kp_other_tasks_us_per_req"] == pytest.approx(500.0)


def test_folded_file_round_trip(tmp_path):
    stacks = kprofile.fold(SCRIPT)
    out = tmp_path / "x.folded.gz"
    kprofile.write_folded(stacks, out)
    assert kprofile.read_folded(out) == stacks


def k(*names):
    """A stack in the kernel: a user frame, then kernel frames outermost first."""
    return ";".join(["srv", "[srv] main", *(f"{n}_[k]" for n in names)])


ENTRY = ("entry_SYSCALL_64_after_hwframe", "do_syscall_64")


@pytest.mark.parametrize("stack, path", [
    # the innermost frame a rule names decides: the same copy is TCP send or TCP receive by its caller
    (k(*ENTRY, "__sys_sendto", "tcp_sendmsg", "tcp_sendmsg_locked", "_copy_from_iter", "copy_user_generic"),
     "TCP send"),
    (k(*ENTRY, "__sys_recvfrom", "sock_recvmsg", "tcp_recvmsg", "tcp_recvmsg_locked", "skb_copy_datagram_iter",
       "copy_user_generic"), "TCP receive"),
    # loopback: the receiver's TCP runs in the sender's softirq, inside the sender's call
    (k(*ENTRY, "tcp_sendmsg", "__tcp_transmit_skb", "ip_finish_output2", "__local_bh_enable_ip", "do_softirq",
       "net_rx_action", "process_backlog", "__netif_receive_skb_one_core", "ip_local_deliver_finish", "tcp_v4_rcv",
       "tcp_rcv_established", "tcp_data_queue"), "TCP receive"),
    (k(*ENTRY, "tcp_sendmsg", "__tcp_transmit_skb", "ip_finish_output2", "__dev_queue_xmit", "loopback_xmit"),
     "IP, loopback and softirq"),
    (k(*ENTRY, "tcp_sendmsg", "__tcp_transmit_skb", "ip_finish_output2", "do_softirq", "net_rx_action",
       "process_backlog", "ip_local_deliver_finish", "tcp_v4_rcv", "tcp_rcv_established", "sock_def_readable",
       "__wake_up_common", "ep_poll_callback", "__wake_up", "try_to_wake_up"), "scheduler"),
    (k(*ENTRY, "tcp_v4_rcv", "sock_def_readable", "__wake_up_common", "ep_poll_callback", "_raw_spin_lock_irqsave"),
     "epoll"),
    (k(*ENTRY, "__x64_sys_epoll_wait", "do_epoll_wait", "ep_poll", "schedule_hrtimeout_range", "schedule",
       "__schedule", "finish_task_switch"), "scheduler"),
    (k(*ENTRY, "__x64_sys_epoll_wait", "do_epoll_wait", "ep_poll", "ep_send_events", "ep_item_poll", "sock_poll",
       "tcp_poll"), "epoll"),
    (k(*ENTRY, "__x64_sys_poll", "do_sys_poll", "do_poll", "sock_poll", "tcp_poll"), "poll and select"),
    (k(*ENTRY, "__x64_sys_io_uring_enter", "io_submit_sqes", "io_issue_sqe", "io_recv", "sock_recvmsg",
       "tcp_recvmsg", "tcp_recvmsg_locked"), "TCP receive"),
    (k(*ENTRY, "__x64_sys_io_uring_enter", "io_submit_sqes", "io_issue_sqe", "io_recv", "io_buffer_select"),
     "io_uring"),
    (k(*ENTRY, "__x64_sys_io_uring_enter", "io_cqring_wait", "io_schedule", "__schedule"), "scheduler"),
    (k(*ENTRY, "__x64_sys_futex", "do_futex", "futex_wake", "_raw_spin_lock"), "futex"),
    (k(*ENTRY, "__x64_sys_futex", "do_futex", "futex_wait", "schedule", "__schedule"), "scheduler"),
    (k("asm_exc_page_fault", "exc_page_fault", "do_user_addr_fault", "handle_mm_fault", "clear_page_erms"),
     "memory"),
    (k(*ENTRY, "tcp_sendmsg", "tcp_stream_alloc_skb", "__alloc_skb", "kmem_cache_alloc_node"), "memory"),
    (k(*ENTRY, "__sys_accept4", "do_accept", "inet_accept", "inet_csk_accept"), "connections"),
    (k("syscall_exit_to_user_mode", "exit_to_user_mode_prepare", "task_work_run", "____fput", "__fput",
       "sock_close", "inet_release", "tcp_close"), "connections"),
    (k(*ENTRY, "__x64_sys_write", "ksys_write", "vfs_write", "sock_write_iter"), "system calls"),
    (k(*ENTRY), "system calls"),
    (k("asm_sysvec_apic_timer_interrupt", "sysvec_apic_timer_interrupt", "hrtimer_interrupt", "tick_sched_timer"),
     "timers and interrupts"),
    (k("some_function_no_rule_names"), "other kernel"),
])
def test_a_kernel_sample_goes_to_the_innermost_path_named(stack, path):
    assert path_of(stack) == path


@pytest.mark.parametrize("task, frame, jvm, path", [
    ("c-epoll", "[libc.so.6] __send", False, "C library"),
    ("c-epoll", "[vdso] __vdso_clock_gettime", False, "C library"),
    ("c-epoll", "[c-epoll] parse_request", False, "own code"),
    ("nginx", "[libpcre2-8.so.0.11.2] pcre2_match_8", False, "other libraries"),
    ("nginx", "[unknown] [unknown]", False, "unknown user code"),
    ("java-worker", "[unknown] [unknown]", True, "JVM-generated code"),
    ("java-worker", "[perf-4242.map] Lfoo;::bar", True, "JVM-generated code"),
    ("GC_Thread#0", "[libjvm.so] G1ParScanThreadState::trim_queue", True, "GC"),
    ("C2_CompilerThre", "[libjvm.so] PhaseIdealLoop::build_loop_tree", True, "JIT compiler"),
    ("java-worker", "[libjvm.so] JavaThread::thread_main_inner", True, "JVM runtime"),
    ("java-worker", "[libnio.so] Java_sun_nio_ch_SocketDispatcher_read0", True, "JDK native libraries"),
])
def test_a_user_sample_goes_to_the_object_it_ran_in(task, frame, jvm, path):
    assert path_of(f"{task};[x] outer;{frame}", jvm) == path


def test_every_path_a_rule_names_is_a_column_and_totals_add_up():
    stacks = Counter({k(*ENTRY, "tcp_sendmsg"): 30, k("x_unnamed"): 10, "srv;[srv] main": 60})
    row = kpaths.columns(stacks, frequency=1000, answered=100)
    assert row["kp_tcp_send_us_per_req"] == pytest.approx(300.0)  # 30 samples of 1 ms over 100 requests
    assert row["kp_other_kernel_us_per_req"] == pytest.approx(100.0)
    assert row["kp_own_code_us_per_req"] == pytest.approx(600.0)
    assert row["kp_kernel_us_per_req"] == pytest.approx(400.0) and row["kp_user_us_per_req"] == pytest.approx(600.0)
    assert sum(row[f"kp_{kpaths.slug(p)}_us_per_req"] for p in kpaths.PATHS) == pytest.approx(1000.0)
    assert row["kp_samples"] == 100
    assert set(kpaths.KPROFILE_COLUMNS) - {"kprofile_file"} == set(row)
    assert kpaths.columns(stacks, 1000, 0)["kp_tcp_send_us_per_req"] is None  # nothing answered: no per-request


def test_no_frame_matches_two_rules_in_a_way_the_order_hides():
    """Each kernel path's own typical function is named by that path's rule and by no earlier one."""
    typical = {"memory": "kmem_cache_alloc_node", "scheduler": "try_to_wake_up", "futex": "futex_wake",
               "epoll": "ep_poll", "poll and select": "do_sys_poll", "io_uring": "io_submit_sqes",
               "connections": "inet_csk_accept", "TCP receive": "tcp_rcv_established", "TCP send": "tcp_write_xmit",
               "IP, loopback and softirq": "loopback_xmit", "timers and interrupts": "hrtimer_interrupt",
               "system calls": "do_syscall_64"}
    assert set(typical) == set(kpaths.KERNEL_PATHS)
    for path, fn in typical.items():
        assert kpaths.kernel_path(["[srv] main", f"{fn}_[k]"]) == path, fn


# --- the RPC providers sampled (rpc-kernel-paths) ---------------------------------------------------

def test_the_rpc_plan_samples_each_provider_beside_the_same_load_unsampled_in_one_process():
    from iobench import registry
    from iobench.kinds.rpc.dataset import KEYS
    from iobench.kinds.rpc.experiment import RpcLoad
    from iobench.kinds.rpc.plans import PROVIDERS, RPC_KERNEL_PATHS as plan
    assert plan.kprofile and set(plan.servers) == set(PROVIDERS) and "profiled" in KEYS
    assert set(kpaths.KPROFILE_COLUMNS) <= set(registry.experiment("rpc-kernel-paths").columns)
    assert not set(kpaths.KPROFILE_COLUMNS) & set(registry.experiment("rpc-provider").columns)
    plain, sampled = [p for p in plan.points if p.rate == 5000.0]
    assert not plain.profiled and sampled.profiled and plain.setting() == sampled.setting()  # one JVM, no restart
    assert plan.points.index(plain) < plan.points.index(sampled)  # the unsampled run is not after perf's
    assert all(p.loop == "open" and p.rate and p.connections == 64 for p in plan.points)  # rpc-syscalls' load
    # each JVM as warm as rpc-provider's before its first point (a first run warmed Tomcat for 60 s, not 90: its
    # sampled run, the second, then took 22 to 37 % less CPU per call than the unsampled first, in every repeat)
    from iobench.kinds.rpc.plans import RPC_PROVIDER
    assert plan.jvm_warmup_s == RPC_PROVIDER.jvm_warmup_s

    class Srv:  # what stem() reads of a server process
        class server:
            id = "rpc-netty"
    stems = {RpcLoad(plan).stem(Srv, p, 1, "r5000") for p in (plain, sampled)}
    assert len(stems) == 2 and any(s.endswith("-profiled-r1") for s in stems)


def test_an_rpc_dataset_captured_before_sampling_reads_as_unsampled(tmp_path):
    import csv
    import json
    from iobench.kinds.rpc.dataset import COLUMNS, load
    old = [c for c in COLUMNS if c not in ("profiled", "pipeline", "close")]
    with open(tmp_path / "results.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=old)
        w.writeheader()
        w.writerow({c: "" for c in old} | {"server": "rpc-netty", "experiment": "sweep", "ok_run": "True",
                                          "generator_bound": "False", "noisy": "False", "outlier": "False",
                                          "repeat": "1", "connections": "64", "ok": "10"})
    (tmp_path / "meta.json").write_text(json.dumps({"profile": "full"}))
    ds = load(tmp_path)
    assert ds.df["profiled"].tolist() == [False]
