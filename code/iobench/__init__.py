"""iobench: the book's benchmark harness.

Start a server from the manifest, check that it answers correctly, drive load with a
load generator, sample the server's and the generator's CPU and memory from /proc,
and capture tidy results with their metadata and the tools' raw output.

Modules, one concern each:
    http        the canonical response and a tiny HTTP client for checks
    manifest    one id per server: how to build and start it, its model and language
    lifecycle   start, wait for READY, verify, stop (always), leave nothing behind
    drivers     load generators (wrk, ab) as argument lists plus pure output parsers
    sampler     /proc sampling of CPU, RSS, PSS, threads and context switches; who was served (ss)
    results     tidy CSV rows, atomic writes, datasets that refuse to be overwritten
    metadata    versions, machine, pinning, date and commit of a run
    profiles    replay / smoke / full
    bench       the runner: warm-up, interleaved repeats, quiet-machine checks
    battery     the conformance battery every server can be checked with
    plots       the standard plots, with machine and date in every caption
"""

SCHEMA_VERSION = 6  # 2: TCP counters (listen overflows, retransmits) per row; 3: requested, backlog;
                    # 4: resets sent, and closes with unread data; 5: meta.json load_commands;
                    # 6: pipeline, pss_kib, conns_served and requests per connection, unserved, outlier
