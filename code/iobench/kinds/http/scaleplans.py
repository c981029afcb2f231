"""What the scale datasets measure: many connections, busy and idle (book/synthesis/many-connections.md).

HTTP plans like those of plans.py (the same HttpPlan and Point; the registry reads both modules).
"""
from __future__ import annotations

from iobench.kinds.http.plans import JAVA_IDS, PIPELINED, HttpPlan, Point
from iobench.servers import manifest

# One connection at a time by design: a single idle connection stops them (book/c/blocking.md): not in the idle study.
ONE_AT_A_TIME = ("c-sequential", "java-blocking")
EVERY_MODEL = ("nginx",) + manifest.ids("C") + JAVA_IDS

# N idle keep-alive connections (each answered once, then silent) beside 40 busy ones: what a connection costs a
# model while it does nothing. One server process per repeat raises them 0 -> 1,000 -> 10,000 -> 100,000 (idle.py),
# so memory per idle connection is measured against the same process at rest with none. No server drops an idle
# connection here (--idle-timeout-s 0). Each level leaves its idle connections in TIME_WAIT (the holder closes
# first): loopback reuses those ports (tcp_tw_reuse=2), and holders use addresses of their own: no drain.
# What every study of idle connections shares: no conformance battery, no server drops an idle connection, no wait
# for TIME_WAIT to drain between servers.
IDLE_STUDY = dict(battery=False, idle_timeout_s=0, time_wait_drained=10**9)
IDLE_LEVELS = (0, 1_000, 10_000, 100_000)
IDLE_CONNECTIONS = HttpPlan(
    dataset="idle-connections",
    description="every model but the one-at-a-time servers, and nginx: 40 busy keep-alive connections "
                "measured while 0, 1,000, 10,000 and 100,000 idle keep-alive connections are held open",
    servers=tuple(s for s in EVERY_MODEL if s not in ONE_AT_A_TIME),
    points=tuple(Point("wrk", 40, True, idle_conns=n) for n in IDLE_LEVELS),
    smoke_points=tuple(Point("wrk", 40, True, idle_conns=n) for n in (0, 1_000)),
    # smoke: the servers book/synthesis/many-connections.md names (side-by-side shows "n/a" for the others)
    smoke_servers=("nginx", "c-select", "c-poll", "c-epoll", "c-uring", "c-uring-multishot", "c-coroutine", "c-thread",
                   "c-fork", "java-nio", "java-thread", "java-vthread", "java-netty", "java-mina"),
    **IDLE_STUDY,
)

# What an idle connection costs a JVM, by what holds it: the Java models that hold every idle connection (not the
# fixed pool, which holds only its pool's), raised through five levels in one process as in the idle study, and at
# rest after each level a full collection, the heap left in use and the JVM's native memory by category
# (run/jvmmem.py: thread stacks, direct buffers). Slopes between levels, not totals over N, are the cost of one
# more connection. Native Memory Tracking is on from the JVM's start: its rates are not the idle study's.
JVM_MEMORY_LEVELS = (0, 2_500, 5_000, 10_000, 15_000)
JVM_MEMORY = HttpPlan(
    dataset="jvm-memory",
    description="the Java models that hold idle connections: 40 busy keep-alive connections beside 0, 2,500, "
                "5,000, 10,000 and 15,000 idle ones, and at rest after each level the heap left after a full "
                "collection and the JVM's native memory by category (Native Memory Tracking)",
    servers=tuple(s for s in JAVA_IDS if s not in ONE_AT_A_TIME + ("java-threadpool",)),
    points=tuple(Point("wrk", 40, True, idle_conns=n) for n in JVM_MEMORY_LEVELS),
    smoke_points=tuple(Point("wrk", 40, True, idle_conns=n) for n in (0, 500, 1_000)),
    smoke_servers=("java-thread", "java-vthread", "java-netty"),
    **IDLE_STUDY,
    measured_s=3.0,
    warmup_s=1.0,
    jvm_memory=True,
)

# C100K on this machine: 100,000 idle connections beside 40 busy ones, held the way nginx holds them: the epoll
# reactor in worker processes (c-epoll-workers, each its own SO_REUSEPORT listener) and nginx with as many workers,
# beside every single-process model that holds every idle connection, up to its own limit here: one process may
# have RLIMIT_NOFILE descriptors (20,000 here, not raisable), so 19,000 is the most each of them is asked to hold,
# and the 50,000 and 100,000 levels are skipped for them with the limit named (meta.json's skipped_points; c-fork
# meets kernel.pid_max instead). Eight workers: 100,000 / 8 = 12,500 each, room for SO_REUSEPORT's uneven hash.
# At rest after each level the kernel's memory too (slab, kernel stacks, socket buffers: run/kernelmem.py) and how
# the server's processes share what it holds. The servers that stop at a pool or at select's FD_SETSIZE
# (c-select, c-prefork, c-threadpool, java-threadpool) are the idle study's: they stop long before 19,000.
C100K_LEVELS = (0, 19_000, 50_000, 100_000)
C100K_WORKERS = 8
C100K_SINGLE = ("nginx", "c-fork", "c-thread", "c-coroutine", "c-poll", "c-epoll", "c-epoll-et", "c-epoll-reuseport",
                "c-uring", "c-uring-multishot", "java-thread", "java-nio", "java-nio-workers", "java-nio-multi",
                "java-nio2", "java-vthread", "java-netty", "java-mina")
C100K = HttpPlan(
    dataset="c100k",
    description=f"40 busy keep-alive connections beside 0, 19,000, 50,000 and 100,000 idle ones: nginx and "
                f"c-epoll-workers with {C100K_WORKERS} worker processes each, and every single-process model that "
                "holds every idle connection up to the one-process descriptor limit; at rest after each level the "
                "server's PSS, the kernel's memory and the connections each of the server's processes holds",
    servers=("nginx-workers", "c-epoll-workers") + C100K_SINGLE,
    points=tuple(Point("wrk", 40, True, idle_conns=n) for n in C100K_LEVELS),
    smoke_points=tuple(Point("wrk", 40, True, idle_conns=n) for n in (0, 1_000, 3_000)),
    smoke_servers=("nginx-workers", "c-epoll-workers", "nginx", "c-epoll", "c-thread", "java-netty"),
    pools=(("nginx-workers", C100K_WORKERS), ("c-epoll-workers", C100K_WORKERS)),
    kernel_memory=True,
    by_process=True,
    **IDLE_STUDY,
    measured_s=4.0,
    warmup_s=1.0,
)

# How the kernel spreads new connections over c-epoll-workers' eight workers, for each way of sharing the port:
# a listening socket each (SO_REUSEPORT: the kernel hashes each connection to one), one inherited socket watched
# with EPOLLEXCLUSIVE (the kernel wakes one waiting worker), or watched plainly (it wakes every waiting worker:
# the thundering herd). 10,000 idle connections beside the 40 busy ones, one server process per mode and repeat;
# the workers report, as they stop, what each accepted and how often its listening socket woke it for nothing.
SHARES = ("reuseport", "exclusive", "herd")
ACCEPT_SPREAD = HttpPlan(
    dataset="accept-spread",
    description=f"c-epoll-workers with {C100K_WORKERS} worker processes, the port shared by SO_REUSEPORT, by "
                "EPOLLEXCLUSIVE on one listening socket, or by one plainly shared socket: 10,000 idle "
                "connections beside 40 busy ones, and what each worker accepted and how often it woke to accept",
    servers=("c-epoll-workers",),
    points=tuple(Point("wrk", 40, True, idle_conns=10_000, share=m) for m in SHARES),
    smoke_points=tuple(Point("wrk", 40, True, idle_conns=1_000, share=m) for m in SHARES),
    pools=(("c-epoll-workers", C100K_WORKERS),),
    by_process=True,
    worker_counts=True,
    **IDLE_STUDY,
    measured_s=4.0,
    warmup_s=1.0,
)

# io_uring as its authors advise against the first io_uring server and epoll, in one run: CPU per request.
IO_URING = HttpPlan(
    dataset="io-uring",
    description="c-uring-multishot against c-uring, c-epoll and nginx: hello-world at 40 and 1,000 "
                "keep-alive connections, and 16 pipelined requests per write at 40",
    servers=("nginx", "c-epoll", "c-uring", "c-uring-multishot"),
    points=(Point("wrk", 40, True), Point("wrk", 1000, True), PIPELINED),
    smoke_points=(Point("wrk", 40, True), Point("wrk", 1000, True), PIPELINED),  # the chapter reads all three
)

# 10,000 busy keep-alive connections against the models a first check saw stop short (c-select, c-fork, java-thread)
# and others: who serves every connection, and the kernel's evidence where one does not (accept queue overflows,
# resets, the server's stderr). Loopback reuses TIME_WAIT ports (tcp_tw_reuse=2): no drain needed.
TEN_THOUSAND = HttpPlan(
    dataset="ten-thousand",
    description="10,000 busy keep-alive connections (wrk, 5 s timeout) against c-select, c-poll, c-epoll, "
                "c-uring-multishot, c-fork, c-thread, java-thread, java-vthread, java-netty and nginx",
    servers=("nginx", "c-select", "c-poll", "c-epoll", "c-uring-multishot", "c-fork", "c-thread", "java-thread",
             "java-vthread", "java-netty"),
    points=(Point("wrk", 10_000, True),),
    battery=False,
    time_wait_drained=10**9,
)

# Every model side by side, in one run so that each is read against nginx in the same time window
# (book/synthesis/side-by-side.md): hello-world keep-alive from 1 to 10,000 connections, a new connection per
# request at 100 and 1,000, 20 ms of work at 40 and 1,000, and the pipelined load that makes the server the
# bottleneck. 24 servers x 9 points x 3 repeats is 640 wrk runs: at the full profile's 10 s (+2 s warm-up) the run
# takes over two hours, so each repeat measures 4 s after a 1 s warm-up (still 10^4 to 10^6 requests per run),
# but 10 s at 10,000 connections: a SYN the full accept queue drops is sent again 1 s and 3 s later, and every
# connection must have had the time to be answered.
# Loopback reuses TIME_WAIT ports (tcp_tw_reuse=2): no drain.
_SCALE_POINTS = (tuple(Point("wrk", c, True) for c in (1, 100, 1000)) + (Point("wrk", 10_000, True, measured_s=10.0),)
                 + tuple(Point("wrk", c, False) for c in (100, 1000))
                 + tuple(Point("wrk", c, True, work_ms=20.0) for c in (40, 1000))
                 + (PIPELINED,))
SCALE = HttpPlan(
    dataset="scale",
    description="every C and Java server and nginx in one run: hello-world keep-alive at 1, 100, 1,000 and "
                "10,000 connections, Connection: close at 100 and 1,000, 20 ms of work at 40 and 1,000, "
                "and 16 pipelined requests per write at 40",
    servers=EVERY_MODEL,
    points=_SCALE_POINTS,
    smoke_points=_SCALE_POINTS,  # the chapter reads every point
    smoke_servers=("nginx", "c-epoll", "c-thread", "java-netty"),  # the smoke book build: 4 models
    battery=False,
    time_wait_drained=10**9,
    measured_s=4.0,
    warmup_s=1.0,
)

SCALE_PLANS = {p.dataset: p for p in (IDLE_CONNECTIONS, JVM_MEMORY, C100K, ACCEPT_SPREAD, IO_URING, TEN_THOUSAND,
                                      SCALE)}
