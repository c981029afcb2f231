"""What the kernel holds for the connections of this machine: read at rest beside a server's own memory.

A connection costs memory the server's PSS never shows: its sockets (the TCP slab cache and the socket's
inode), the open file and its dentry, the epoll item that watches it, any bytes queued in its buffers, and for
a thread or process per connection a kernel stack and page tables. `snapshot()` reads them from /proc:
meminfo's slab, kernel-stack and page-table totals (the whole machine), the TCP line of the server's network
namespace's sockstat (sockets in use, pages in socket buffers), and the slab caches a socket uses (objects in
use x object size). Machine-wide counts take in both ends of a loopback connection (the server's socket and
its client's are the same kind of object) and anything else that ran meanwhile: a plan that reads them runs
alone on the machine, and a page compares levels of one server process, never absolute values.
"""
from __future__ import annotations

import re
from pathlib import Path

PAGE_KIB = 4
MEMINFO = {"Slab": "k_slab_kib", "SUnreclaim": "k_sunreclaim_kib", "KernelStack": "k_kernel_stack_kib",
           "PageTables": "k_page_tables_kib"}
# slab caches a TCP connection's socket uses, by what the book calls them
CACHES = {"k_tcp_sock_kib": ("TCP",), "k_sock_inode_kib": ("sock_inode_cache",),
          "k_epoll_kib": ("eventpoll_epi", "eventpoll_pwq"), "k_file_kib": ("filp", "dentry")}
COLUMNS = [*MEMINFO.values(), "k_tcp_inuse", "k_tcp_mem_kib", *CACHES, "kernel_memory_file"]


def parse_meminfo(text: str) -> dict[str, int]:
    """/proc/meminfo -> {MEMINFO column: KiB}."""
    out = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        if name in MEMINFO:
            out[MEMINFO[name]] = int(rest.split()[0])
    return out


def parse_sockstat(text: str) -> dict[str, int]:
    """/proc/<pid>/net/sockstat -> TCP sockets in use and the pages their buffers hold (as KiB)."""
    m = re.search(r"^TCP: inuse (\d+) orphan \d+ tw \d+ alloc \d+ mem (\d+)", text, re.M)
    if not m:
        raise ValueError(f"no TCP line in sockstat: {text[:200]!r}")
    return {"k_tcp_inuse": int(m.group(1)), "k_tcp_mem_kib": int(m.group(2)) * PAGE_KIB}


def parse_slabinfo(text: str) -> dict[str, int]:
    """/proc/slabinfo -> {CACHES column: KiB of objects in use}; a cache this kernel lacks (or merged into
    another) counts 0."""
    used: dict[str, int] = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) > 3 and f[1].isdigit():
            used[f[0]] = int(f[1]) * int(f[3])  # active objects x object size, bytes
    return {col: sum(used.get(c, 0) for c in caches) // 1024 for col, caches in CACHES.items()}


def snapshot(pid: int) -> tuple[dict, str]:
    """The columns now, and the raw text they were read from (kept beside the data). `pid`: a process in the
    server's network namespace. /proc/slabinfo needs root: without it its columns stay empty."""
    meminfo = Path("/proc/meminfo").read_text()
    sockstat = Path(f"/proc/{pid}/net/sockstat").read_text()
    try:
        slabinfo = Path("/proc/slabinfo").read_text()
    except PermissionError:
        slabinfo = ""
    wanted = {c for caches in CACHES.values() for c in caches}
    slab_lines = [line for line in slabinfo.splitlines()
                  if line.startswith(("slabinfo", "#")) or line.split(" ", 1)[0] in wanted]
    cols = {**parse_meminfo(meminfo), **parse_sockstat(sockstat),
            **(parse_slabinfo(slabinfo) if slabinfo else {c: None for c in CACHES})}
    raw = ("# /proc/meminfo (the lines read)\n"
           + "".join(f"{line}\n" for line in meminfo.splitlines() if line.split(":")[0] in MEMINFO)
           + f"# /proc/{pid}/net/sockstat\n{sockstat}"
           + "# /proc/slabinfo (the caches read)\n" + "".join(f"{line}\n" for line in slab_lines))
    return cols, raw
