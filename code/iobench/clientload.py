"""The Java HTTP clients as a load generator: iom.clients.OpenLoad (code/java/clients), one JVM per run.

A driver like the others (drivers.py): a LoadSpec in, a command line out; the tool's one-line
summary (`CLIENTLOAD {...}`) in, a LoadResult out. The client under test is the generator: what
is measured is how it waits, what it costs and what it loses, against a server held fixed.

The JVM warms up in its own process (--warmup, at the same rate, not recorded) before it
measures: a second JVM for the warm-up would throw away what the JIT compiled.
"""
from __future__ import annotations

import re

from .drivers import DRIVERS, Driver, LoadResult, LoadSpec, summary_line
from .jvmlog import gc_pauses  # noqa: F401  (clientrun reads the client's log with it)
from .manifest import CODE, JAVA_FLAGS, java_home

# The servers' JVM flags with a 2 GiB heap: the client of write-up 003 (an 8 GiB machine) had the JVM's
# default of a quarter of memory, and at 512 MiB Apache's client ran out of heap in its 30,000-request burst.
CLIENT_JAVA_FLAGS = ("-Xms2g", "-Xmx2g", *(f for f in JAVA_FLAGS if not f.startswith(("-Xms", "-Xmx"))))

CLIENTS = CODE / "java" / "clients"
CLIENTS_CLASSPATH = f"{CLIENTS / 'target' / 'classes'}:{CLIENTS / 'target' / 'lib'}/*"
CLIENTS_BUILD = ("-C", str(CODE), "clients")
IDS = ("ahc", "apache-hc5", "jdk", "jetty", "okhttp")  # iom.clients.Drivers.IDS


# What a run leaves beside its .hlog: the garbage collector's log (one line per pause, stamped with the
# JVM's uptime) and one dump of every thread halfway through the measured window.
BESIDE_HLOG = {"gc_log": ".gc.log", "thread_dump": ".threads.txt"}


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
        # "at java.base/sun.nio.ch.EPoll.wait(Native Method)": the method, without its module
        methods = [re.sub(r"^[\w.@-]*/+", "", f.strip().removeprefix("at ").split("(")[0]) for f in frames]
        name = re.sub(r"@[0-9a-fA-F]+", "", m[1].split("://")[0])   # as ThreadCensus.prefix groups them
        found.append({"name": m[1], "group": re.sub(r"\d+", "#", name).strip(),
                      "state": m[2], "cpu_ms": float(m[3]), "top": methods[0] if methods else "",
                      "library": next((f for f in methods if not f.startswith(_JDK)), "")})
    return found


class ClientLoad(Driver):
    """One Java client driven open-loop (constant rate, intended starts, a cap on requests in
    flight beyond which a request is dropped, latency from the intended start), or as source
    write-up 003 drove it: all requests at once with no cap (burst), or one submit every
    `park_us` without waiting (park, its JMH shape). Every offered request ends one way: ok,
    non2xx, timeout, rejected (by the client itself), error or dropped; OpenLoad checks that
    they sum to what was offered."""
    name = "clientload"

    def argv(self, spec: LoadSpec, url: str) -> list[str]:
        self.gets_only(spec)
        if not (CLIENTS / "target" / "classes").is_dir():
            raise RuntimeError(f"the Java clients are not built: make {' '.join(CLIENTS_BUILD)}")
        if spec.client not in IDS:
            raise ValueError(f"unknown client {spec.client!r}; known: {', '.join(IDS)}")
        gc_log = [f"-Xlog:gc:file={beside_hlog(spec.hist, 'gc_log')}:uptime"] if spec.hist else []
        argv = [str(java_home() / "bin" / "java"), *CLIENT_JAVA_FLAGS, *gc_log, "-cp", CLIENTS_CLASSPATH,
                "iom.clients.OpenLoad",
                "--client", spec.client, "--mode", spec.client_mode, "--duration", f"{spec.duration_s:g}",
                "--warmup", f"{spec.warmup_s:g}", "--timeout", f"{spec.timeout_s:g}",
                "--io-threads", str(spec.threads)]
        argv += ["--shipped"] if spec.shipped else ["--connections", str(spec.connections)]
        if spec.client_mode == "open":
            argv += ["--rate", f"{spec.rate:g}", "--max-in-flight", str(spec.max_in_flight)]
            if spec.warmup_rate:
                argv += ["--warmup-rate", f"{spec.warmup_rate:g}"]
        elif spec.client_mode == "burst":
            argv += ["--requests", str(spec.requests)]
        elif spec.client_mode == "park":
            argv += ["--park-us", str(spec.park_us)]
        else:
            raise ValueError(f"unknown client mode {spec.client_mode!r}: open, burst or park")
        if spec.hist:
            argv += ["--hlog", spec.hist, "--thread-dump", beside_hlog(spec.hist, "thread_dump")]
        return argv + [url.rstrip("/") + spec.path]

    # the CLIENTLOAD line's fields that LoadResult has columns for; the rest go to `extra`
    _COLUMNS = ("ok", "achieved_rps", "p50_ms", "p90_ms", "p99_ms", "mean_ms", "max_ms", "non2xx", "timeouts")

    def parse(self, output: str, returncode: int) -> LoadResult:
        d = summary_line(output, "CLIENTLOAD")
        if returncode != 0 or d is None:
            return self.failed(returncode, output)
        has = d["ok"] > 0
        return LoadResult(
            ok=has, failure="" if has else f"{d['client']}: no request answered 2xx",
            requests=d["ok"], duration_s=d["elapsed_s"], rps=d["achieved_rps"],
            p50_ms=d["p50_ms"], p90_ms=d["p90_ms"], p99_ms=d["p99_ms"], mean_ms=d["mean_ms"], max_ms=d["max_ms"],
            # dropped requests were never sent: not the server's errors, they are in extra
            errors=d["non2xx"] + d["timeouts"] + d["rejected"] + d["errors"],
            errors_timeout=d["timeouts"], non2xx=d["non2xx"],
            extra={k: v for k, v in d.items() if k not in self._COLUMNS})


DRIVERS[ClientLoad.name] = ClientLoad()
