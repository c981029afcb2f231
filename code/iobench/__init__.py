"""iobench: the book's benchmark harness.

Start a server from the manifest, check that it answers correctly, drive load with a
load generator, sample the server's and the generator's CPU and memory from /proc,
and capture tidy results with their metadata and the tools' raw output.

Modules, one concern each:
    http        the canonical response and a tiny HTTP client for checks
    manifest    one id per server (HTTP and echo): how to build and start it, model, language
    procs       processes: start from an argument list, wait for READY, stop a group, /proc
    lifecycle   a server process: start, wait until ready, verify, stop (always)
    cgroup      a CPU-accounting cgroup per server, so forked children are counted
    drivers     load generators (wrk, ab, iom-openloop, iom-echoload) as argument lists plus parsers
    sampler     /proc sampling of CPU, RSS, PSS, threads and context switches; who was served (ss)
    netlink     links that are not loopback: DelayLink (50 ms round trip), VethLink (1 Gbit, MTU 1500)
    runner      the one lifecycle every experiment runs on: warm-up, quiet machine, repeats, commit
    limits      file descriptors raised before a run; the process, thread and mapping limits recorded
    idle        idle keep-alive connections held open beside a server (iom-idle), raised step by step
    plans       what each dataset measures (HTTP plans and echo plans; scaleplans: many connections)
    bench       the HTTP experiments on the runner (and the battery after them)
    echorun     the echo experiments on the runner (read statistics, packet traces, JFR)
    results     tidy CSV rows, atomic writes, datasets that refuse to be overwritten, outliers
    metadata    versions, machine, pinning, date and commit of a run
    profiles    replay / smoke / full
    dataset     captured HTTP datasets: load, summarise, say where they came from; obtain
    echo        captured echo datasets: read statistics, traces, JFR tables, plots
    battery     the conformance battery every server can be checked with
    plots       the standard plots, with machine and date in every caption
    report      what chapters compute to quote in prose: one value, counts in words, battery verdicts
"""

SCHEMA_VERSION = 7  # 2: TCP counters (listen overflows, retransmits) per row; 3: requested, backlog;
                    # 4: resets sent, and closes with unread data; 5: meta.json load_commands;
                    # 6: pipeline, pss_kib, conns_served and requests per connection, unserved, outlier;
                    # 7: idle_conns and the idle columns; meta.json limits (file descriptors raised)
