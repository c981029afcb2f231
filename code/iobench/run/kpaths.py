"""Where a sampled stack's CPU went: one path of the kernel, or a kind of user code (run/kprofile.py samples them).

A sample whose innermost frame is the kernel's goes to a kernel path. Its frames are read from the innermost outward
and the first that names a path decides: a sample in `copy_user_enhanced_fast_string` under `tcp_recvmsg_locked` is
TCP receive, the same copy under `tcp_sendmsg_locked` TCP send. Frames no rule names (locks, copies, checksums, the
sk_buff's own helpers) belong to their callers. The paths:

- **system calls**: entry and exit (`entry_SYSCALL_64`, `syscall_exit_to_user_mode`) and the layers between a call
  and its protocol: the descriptor's lookup, VFS, the socket layer, security hooks;
- **TCP send** (`tcp_sendmsg`, `tcp_write_xmit`, `__tcp_transmit_skb`) and **TCP receive** (`tcp_recvmsg`,
  `tcp_v4_rcv`, `tcp_rcv_established`, `tcp_ack`);
- **connections**: accept, connect, close and shutdown, the handshake and the teardown, socket creation and release;
- **IP, loopback and softirq**: IP output and input, the device queue, `loopback_xmit`, `net_rx_action` and the
  softirq that runs it (on loopback the receiving side's IP and TCP run inside the sender's call, in its softirq);
- **epoll**, **poll and select**, **io_uring** (its own code; the TCP it drives is TCP's), **futex**;
- **scheduler**: wake-ups and switches (`try_to_wake_up`, `__schedule`, `finish_task_switch`);
- **memory**: page faults, the page and slab allocators, memory-cgroup charges (for socket buffers too);
- **timers and interrupts**: the timer tick, hrtimers, other interrupts;
- **other kernel**: anything else.

A sample whose innermost frame is user code goes to the object it ran in: the C library (with the vDSO), the
server's own program, other shared libraries; in a JVM, code the JVM generated (compiled or interpreted Java, which
perf sees as unknown addresses), the JIT compiler's and GC's threads (in libjvm), the rest of libjvm (the
runtime), and the JDK's native libraries.
"""
from __future__ import annotations

import re
from collections import Counter

_K = {
    "memory": r"asm_exc_page_fault|exc_page_fault|do_user_addr_fault|(?:__)?handle_mm_fault|do_anonymous_page"
              r"|do_wp_page|do_fault|filemap_map_pages|clear_page_\w+|kmem_cache_(alloc|free)\w*|__kmem_cache_\w+|(?:__)?kmalloc\w*"
              r"|kfree|kvfree|krealloc|__alloc_pages\w*|alloc_pages\w*|get_page_from_freelist|rmqueue\w*"
              r"|free_unref_page\w*|__free_pages\w*|free_pcppages_bulk|_{0,3}slab_alloc\w*|__slab_free|slab_\w+"
              r"|mmap_region|do_mmap|(?:__)?do_munmap|do_vmi_\w+|unmap_\w+|zap_\w+|do_brk_flags|__vm_munmap|page_fault\w*"
              r"|mem_cgroup_\w+|__mem_cgroup_\w+|memcg_\w+|obj_cgroup_\w+|refill_obj_stock|mod_objcg_state"
              r"|page_frag_alloc\w*|skb_page_frag_refill|sk_page_frag_refill|__sk_mem_\w+|sk_mem_\w+"
              r"|sk_forced_mem_schedule|__sk_mem_reduce_allocated|__sk_mem_raise_allocated|tlb_\w+|flush_tlb_\w+",
    "scheduler": r"(?:__)?schedule\w*|schedule_\w+|try_to_wake_up|wake_up_\w+|__wake_up\w*|ttwu_\w+"
                 r"|finish_task_switch\w*"
                 r"|__switch_to\w*|pick_next_\w+|put_prev_\w+|(en|de)queue_(task|entity)\w*|update_curr\w*"
                 r"|update_load_avg|update_cfs_group|check_preempt\w*|resched_curr|select_task_rq\w*|set_next_entity"
                 r"|context_switch|psi_\w+|cpuacct_charge|newidle_balance|load_balance|sched_\w+|prepare_task_switch"
                 r"|activate_task|autoremove_wake_function|default_wake_function|io_schedule\w*|switch_mm\w*"
                 r"|reweight_entity|__calc_delta|place_entity|yield_task_fair|do_sched_yield|__x64_sys_sched_yield",
    "futex": r"__x64_sys_futex\w*|do_futex|futex_\w+|__futex_\w+|get_futex_key",
    "epoll": r"__x64_sys_epoll_\w+|do_epoll_\w+|ep_\w+|__ep_\w+|epoll_\w+",
    "poll and select": r"__x64_sys_(poll|ppoll|select|pselect6)|do_sys_poll|do_poll\w*|do_select|core_sys_select"
                       r"|__pollwait|poll_freewait|poll_select_\w+|pollwake|kern_select",
    "io_uring": r"__x64_sys_io_uring_\w+|(?:__)?io_(?!schedule)\w+|io_uring\w*|tctx_task_work\w*",
    "connections": r"__sys_accept4\w*|do_accept|inet_accept|inet_csk_accept|__x64_sys_accept4?|__sys_connect\w*"
                   r"|__x64_sys_connect|inet_stream_connect|__inet_stream_connect|tcp_v4_connect|tcp_connect"
                   r"|tcp_conn_request|tcp_v4_conn_request|tcp_v4_syn_recv_sock|tcp_create_openreq_child|inet_csk_\w+"
                   r"|tcp_rcv_state_process|tcp_close|__tcp_close|tcp_fin|tcp_time_wait|inet_twsk_\w+|tcp_set_state"
                   r"|tcp_done|inet_release|sock_close|__sock_release|sock_release|tcp_disconnect|tcp_v4_destroy_sock"
                   r"|inet_sock_destruct|__sk_destruct|sk_free|sk_destruct|__sys_socket\w*|__x64_sys_socket"
                   r"|sock_create\w*|__sock_create|inet_create|sock_alloc\w*|sk_alloc|sk_prot_alloc|tcp_v4_init_sock"
                   r"|tcp_init_sock|__x64_sys_close|__close_fd\w*|close_fd\w*|filp_close|__fput|____fput|fput\w*"
                   r"|task_work_run|alloc_file\w*|__x64_sys_shutdown|__sys_shutdown\w*|inet_shutdown|tcp_shutdown"
                   r"|tcp_reset|tcp_send_active_reset|tcp_v4_send_reset|tcp_check_req|tcp_v4_send_synack"
                   r"|tcp_make_synack|reqsk_\w+|inet_reqsk_alloc|tcp_child_process|sk_clone_lock|inet_hash_connect"
                   r"|__inet_hash_connect|__inet_check_established|inet_ehash_\w+|inet_put_port|__inet_inherit_port"
                   r"|inet_bind\w*|__inet_bind|tcp_v4_hash|__inet_hash|inet_hash|tcp_openreq_init_rwin|tcp_finish_connect"
                   r"|tcp_init_transfer|tcp_timewait_state_process|tcp_v4_timewait_ack|tcp_send_synack|tcp_send_syn_data"
                   r"|inet_csk_complete_hashdance|tcp_v4_syn_recv_sock|tcp_ao_\w+",
    "TCP receive": r"tcp_v[46]_rcv|tcp_v4_do_rcv|tcp_rcv_\w+|tcp_data_queue\w*|tcp_queue_rcv|tcp_ack\w*"
                   r"|tcp_event_data_recv|tcp_recvmsg\w*|tcp_cleanup_rbuf|tcp_rcv_space_adjust|tcp_validate_incoming"
                   r"|tcp_check_space|tcp_urg|tcp_add_backlog|tcp_v4_early_demux|tcp_clean_rtx_queue\w*|tcp_try_coalesce"
                   r"|tcp_data_ready|tcp_ofo_queue|tcp_grow_window|tcp_measure_rcv_mss|tcp_rearm_rto|tcp_parse_options"
                   r"|tcp_filter|tcp_inbound_\w+|tcp_v4_inbound_\w+|__inet_lookup_established|inet_ehashfn"
                   r"|__tcp_ack_snd_check|tcp_send_delayed_ack|tcp_sack_\w+|tcp_newly_delivered|tcp_update_pacing_rate"
                   r"|tcp_schedule_loss_probe|sock_def_readable|tcp_stream_memory_free|tcp_recv_timestamp|tcp_release_cb"
                   r"|tcp_update_recv_tstamps|tcp_recv_skb|tcp_read_\w+|tcp_splice_\w+|tcp_v4_fill_cb",
    "TCP send": r"tcp_sendmsg\w*|tcp_push\w*|__tcp_push_pending_frames|tcp_write_xmit|tcp_transmit_skb"
                r"|__tcp_transmit_skb|tcp_send_ack|__tcp_send_ack\w*|tcp_send_mss|tcp_current_mss|tcp_stream_alloc_skb"
                r"|tcp_skb_entail|tcp_established_options|tcp_options_write|tcp_rate_\w+|tcp_event_new_data_sent"
                r"|tcp_small_queue_check\w*|tcp_tso_segs|tcp_chrono_\w+|tcp_wfree|tcp_mstamp_refresh"
                r"|(?:__)?tcp_v4_send_check|tcp_update_skb_after_send|tcp_send_fin|sk_stream_alloc_skb|tcp_init_tso_segs"
                r"|tcp_set_skb_tso_segs|tcp_cwnd_\w+|tcp_nagle_\w+|tcp_send_probe0|tcp_write_wakeup|tcp_pace_kick"
                r"|tcp_tsq_\w+|tcp_check_sack_reneging|sk_stream_\w+|tcp_sendpage\w*|tcp_build_frag|tcp_wmem_schedule",
    "IP, loopback and softirq": r"ip_\w+|__ip_\w+|__dev_queue_xmit|dev_queue_xmit\w*|dev_hard_start_xmit"
                                r"|loopback_xmit|netif_rx\w*|__netif_rx|enqueue_to_backlog|__netif_receive_skb\w*"
                                r"|netif_receive_skb\w*|process_backlog|net_rx_action|__napi_poll|napi_\w+"
                                r"|__do_softirq|do_softirq\w*|__local_bh_enable_ip|local_bh_enable|neigh_\w+"
                                r"|validate_xmit_skb\w*|sch_direct_xmit|__qdisc_run|qdisc_\w+|pfifo_fast_\w+"
                                r"|nf_hook_slow|nf_\w+|eth_type_trans|raw_local_deliver|inet_gro\w*|dev_gro\w*"
                                r"|gro_\w+|rps_\w+|dst_release|skb_dst\w*|ipv4_\w+|fib_\w+|__fib_\w+|rt_\w+"
                                r"|netdev_core_pick_tx|netdev_pick_tx|dev_pick_tx\w*|__netif_receive_skb_core\w*"
                                r"|ksoftirqd\w*|run_ksoftirqd|__raise_softirq_irqoff|raise_softirq\w*"
                                r"|skb_defer_rx_timestamp|tcp_gro_\w+|tcp4_gro_\w+|inet_ehash_nolisten",
    "timers and interrupts": r"asm_sysvec_\w+|sysvec_\w+|__sysvec_\w+|hrtimer_\w+|__hrtimer_\w+|tick_\w+"
                             r"|update_process_times|scheduler_tick|irq_\w+|__irq_\w+|handle_irq\w*|common_interrupt"
                             r"|asm_common_interrupt|run_timer_softirq|__run_timers|call_timer_fn|smp_call_function\w*"
                             r"|flush_smp_call_function\w*|generic_smp_call_function\w*|timerqueue_\w+|ktime_get\w*"
                             r"|clockevents_\w+|lapic_next_deadline|native_apic_\w+|x2apic_\w+|account_\w+_time\w*"
                             r"|irqtime_account_\w+|rcu_\w+|__rcu_\w+|note_gp_changes",
    "system calls": r"entry_SYSCALL_64\w*|do_syscall_64|syscall_exit\w*|exit_to_user_mode\w*|syscall_enter\w*"
                    r"|syscall_return_via_sysret|__x64_sys_\w+|__sys_(sendto|recvfrom|sendmsg|recvmsg|sendmmsg"
                    r"|recvmmsg)\w*|___sys_\w+|ksys_(read|write|readv|writev)|do_(readv|writev|iter_\w+)"
                    r"|vfs_(read|write|readv|writev|iter_\w+)|new_sync_(read|write)|sock_(read|write)_iter"
                    r"|sock_(send|recv)msg\w*|__sock_(send|recv)msg\w*|security_\w+|apparmor_\w+|aa_\w+|bpf_lsm_\w+"
                    r"|sockfd_lookup_light|(?:__)?fget\w*|(?:__)?fdget\w*|fdget_pos|__f_unlock_pos|import_(single_range"
                    r"|iovec|ubuf)|__import_iovec|rw_verify_area|fsnotify\w*|__fsnotify_parent|inet6?_(send|recv)msg"
                    r"|syscall_trace_enter|__audit_\w+|audit_\w+|entry_SYSRETQ\w*|restore_regs_and_return_to_kernel"
                    r"|native_irq_return_iret|__x64_sys_(read|write|readv|writev|sendto|recvfrom|sendmsg|recvmsg)"
                    r"|switch_fpu_return|fpregs_\w+|restore_fpregs_from_fpstate|arch_exit_to_user_mode\w*"
                    r"|syscall_enter_from_user_mode\w*|__ct_\w+|ct_\w+|context_tracking_\w+|xfd_validate_state",
}
KERNEL_PATHS = tuple(_K)  # in the order a frame is tried against them
OTHER_KERNEL = "other kernel"
_RULES = [(name, re.compile(rf"^(?:{rx})$")) for name, rx in _K.items()]

USER = ("C library", "own code", "other libraries", "JVM-generated code", "JIT compiler", "GC", "JVM runtime",
        "JDK native libraries", "unknown user code")
PATHS = (*KERNEL_PATHS, OTHER_KERNEL, *USER)

_LIBC = re.compile(r"^(libc\.so|libc-|ld-linux|libpthread|libm\.so|libdl|librt|vdso$)")
_JDK_NATIVE = re.compile(r"^lib(java|nio|net|zip|jimage|verify|management\w*|extnet|jli)\.so")
_GC_TASK = re.compile(r"^(GC_Thread|G1_|GC_|VM_Periodic|Conc|ZWorker|Shenandoah)")
_JIT_TASK = re.compile(r"^(C1_CompilerThre|C2_CompilerThre|C\d_Compiler)")


def kernel_path(frames: list[str]) -> str:
    """The path of a sample whose frames (outermost first) end in the kernel's: the innermost frame a rule names."""
    for frame in reversed(frames):
        if not frame.endswith("_[k]"):
            break  # back in user space: no kernel frame named a path
        name = frame[:-4]
        for path, rule in _RULES:
            if rule.match(name):
                return path
    return OTHER_KERNEL


def user_path(task: str, frame: str, jvm: bool) -> str:
    """The kind of user code a sample's innermost frame (`[object] symbol`) ran in."""
    obj = frame[1:frame.index("]")] if frame.startswith("[") and "]" in frame else ""
    if _LIBC.match(obj):
        return "C library"
    if obj == "libjvm.so":
        return "GC" if _GC_TASK.match(task) else "JIT compiler" if _JIT_TASK.match(task) else "JVM runtime"
    if _JDK_NATIVE.match(obj):
        return "JDK native libraries"
    if obj in ("unknown", "", "anon") or obj.startswith(("perf-", "memfd:")):
        return "JVM-generated code" if jvm else "unknown user code"
    if ".so" in obj:
        return "other libraries"
    return "own code"


def path_of(stack: str, jvm: bool = False) -> str:
    """A folded stack (`task;outermost;...;innermost`) -> the path its samples go to."""
    task, *frames = stack.split(";")
    if not frames:
        return "unknown user code"
    if frames[-1].endswith("_[k]"):
        return kernel_path(frames)
    return user_path(task, frames[-1], jvm)


IDLE, OTHER_TASKS = "[idle]", "[other tasks]"  # run/kprofile.fold's lines for samples not the server's


def split(stacks: Counter, jvm: bool = False) -> Counter:
    """Counter of folded stacks -> Counter of the server's samples by path (PATHS); the idle task's and other tasks'
    samples (on a pinned server's cores) under their own keys."""
    out: Counter = Counter()
    for stack, n in stacks.items():
        out[stack if stack in (IDLE, OTHER_TASKS) else path_of(stack, jvm)] += n
    return out


def slug(path: str) -> str:
    """A path as part of a column's name: 'IP, loopback and softirq' -> 'ip_loopback_and_softirq'."""
    return re.sub(r"[^a-z0-9]+", "_", path.lower()).strip("_")


COLUMNS = [f"kp_{slug(p)}_us_per_req" for p in PATHS]
KPROFILE_COLUMNS = ["kp_kernel_us_per_req", "kp_user_us_per_req", *COLUMNS, "kp_other_tasks_us_per_req",
                    "kp_samples", "kprofile_file"]
# a summary's medians of them, where a dataset has them
KPROFILE_SUMMARY = {c: (c, "median") for c in KPROFILE_COLUMNS if c.endswith("_us_per_req")}


def columns(stacks: Counter, frequency: int, answered: int, jvm: bool = False) -> dict:
    """A profile's samples as a row's columns: µs of CPU per answered request by path, kernel and user totals."""
    by = split(stacks, jvm)
    def us(n):
        return 1e6 * n / frequency / answered if answered else None
    kernel = sum(by[p] for p in (*KERNEL_PATHS, OTHER_KERNEL))
    mine = sum(by[p] for p in PATHS)
    return {**{f"kp_{slug(p)}_us_per_req": us(by[p]) for p in PATHS},
            "kp_kernel_us_per_req": us(kernel), "kp_user_us_per_req": us(mine - kernel),
            "kp_other_tasks_us_per_req": us(by[OTHER_TASKS]), "kp_samples": mine}
