"""The Java HTTP clients as a load generator: iom.clients.OpenLoad (code/java/clients), one JVM per run.

Its driver is drivers.ClientLoad, like the others: a LoadSpec in, a command line out; the tool's one-line
summary (`CLIENTLOAD {...}`) in, a LoadResult out. The client under test is the generator: what
is measured is how it waits, what it costs and what it loses, against a server held fixed.

The JVM warms up in its own process (--warmup, at the same rate, not recorded) before it
measures: a second JVM for the warm-up would throw away what the JIT compiled.
"""
from __future__ import annotations

import json
import re

from iobench.servers.manifest import CODE, JAVA_FLAGS

# The servers' JVM flags with a 2 GiB heap: the client of write-up 003 (an 8 GiB machine) had the JVM's
# default of a quarter of memory, and at 512 MiB Apache's client ran out of heap in its 30,000-request burst.
CLIENT_JAVA_FLAGS = ("-Xms2g", "-Xmx2g", *(f for f in JAVA_FLAGS if not f.startswith(("-Xms", "-Xmx"))))

CLIENTS = CODE / "java" / "clients"
CLIENTS_CLASSPATH = f"{CLIENTS / 'target' / 'classes'}:{CLIENTS / 'target' / 'lib'}/*"
CLIENTS_BUILD = ("-C", str(CODE), "clients")
IDS = ("ahc", "apache-hc5", "jdk", "jetty", "okhttp")  # iom.clients.Drivers.IDS


# What a run leaves beside its .hlog: the garbage collector's log (one line per pause, stamped with the
# JVM's uptime), one dump of every thread halfway through the measured window, and the run's timeline
# (OpenLoad --timeline: every 100 ms, requests sent, answered and in flight, CPU by group of threads,
# the collector's pauses, the heap, the pool's own account).
BESIDE_HLOG = {"gc_log": ".gc.log", "thread_dump": ".threads.txt", "timeline": ".timeline.jsonl"}


def beside_hlog(hist: str, what: str) -> str:
    """The path of `what` (BESIDE_HLOG) of the run whose .hlog is `hist`."""
    return hist.removesuffix(".hlog") + BESIDE_HLOG[what]


_THREAD = re.compile(r'^"(.*)" #\d+ (?:daemon )?(\w+) cpu=([\d.]+)ms')
_JDK = ("java.", "javax.", "jdk.", "sun.", "com.sun.")


def thread_dump(text: str) -> list[dict]:
    """OpenLoad's --thread-dump file: per thread its name, the group it is named in (numbers out), its
    state, its CPU (ms), its top frame (`top`: where it waits when it waits) and the first frame
    outside the JDK (`library`: whose code put it there; empty when none)."""
    found = []
    for block in text.split("\n\n")[1:]:
        head, *frames = block.strip().splitlines()
        m = _THREAD.match(head)
        if not m:
            continue
        # "at java.base@25/sun.nio.ch.EPoll.wait(Native Method)", "at platform/java.net.http@25/jdk.internal...",
        # "at app//iom.clients...": the method, without its class loader and module
        methods = [re.sub(r"^(?:[\w.@-]*/+)+", "", f.strip().removeprefix("at ").split("(")[0]) for f in frames]
        name = re.sub(r"@[0-9a-fA-F]+", "", m[1].split("://")[0])   # as ThreadCensus.prefix groups them
        found.append({"name": m[1], "group": re.sub(r"\d+", "#", name).strip(),
                      "state": m[2], "cpu_ms": float(m[3]), "top": methods[0] if methods else "",
                      "library": next((f for f in methods if not f.startswith(_JDK)), "")})
    return found


def timeline(text: str) -> list[dict]:
    """OpenLoad's --timeline file, one dict per line (every 100 ms): t_ms from the first request, the
    requests sent, ok, failed and in flight so far, the connections opened so far (`opened`: the kernel's
    ActiveOpens since the first line), gc_ms and gc_count (pauses so far), heap_used_mib,
    `cpu_<group>` per group of threads (ms so far; `cpu_jvm` is the rest of the process: the collector's
    and the compiler's threads), `pool_<count>` where the driver gave the pool's own account, and `busy`:
    each thread that used a tenth of the interval or more, by name, to its stack then (innermost frame
    first, "Class.method" joined by " < ")."""
    rows = []
    for line in text.splitlines():
        d = json.loads(line)
        cpu, pool = d.pop("cpu_ms", {}), d.pop("pool", {})
        rows.append({**d, "busy": d.get("busy", {}), **{f"cpu_{g}": ms for g, ms in cpu.items()},
                     **{f"pool_{k}": v for k, v in pool.items()}})
    return rows
