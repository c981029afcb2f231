"""Load generators, plugged in one way.

A driver turns a ``LoadSpec`` into an argument list and parses the tool's raw output
into a ``LoadResult``. Parsers are pure functions of (output, exit code), tested
against outputs captured from real runs (code/tests/fixtures/). New generators (the
TCP echo generator, the open-loop HTTP generator, the Java clients of clientload.py) implement the
same two methods. parse_raw reads a raw file of results.raw_text back through its tool's parser.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field

from iobench.load import clientload
from iobench.servers.manifest import java_home

# Load generators run with the repository root as their working directory (runner.run_load),
# so the script's path in every recorded command line is the same on every machine.
WRK_SCRIPT = "code/iobench/load/wrk_report.lua"


@dataclass(frozen=True)
class LoadSpec:
    tool: str                  # a key of DRIVERS
    connections: int
    keepalive: bool = True     # False: every request on a new connection
    duration_s: float = 10.0   # time-bound tools (wrk)
    requests: int = 0          # ab: a request count (-n) instead of a duration
    threads: int = 1
    timeout_s: float = 5.0
    path: str = "/"
    pipeline: int = 1          # wrk: requests per write, sent before any answer (1: no pipelining)
    rate: float = 0.0          # open-loop tools: requests per second, fixed in advance
    size: int = 0              # echo: bytes per message
    nodelay: bool = False      # echo: TCP_NODELAY on the generator's sockets (off: Nagle on)
    split: tuple[int, int, int] = (0, 0, 0)  # echo: every K-th message written as B bytes, U µs, the rest
    hist: str = ""             # openloop: write the latency histogram to this file (clientload: the .hlog)
    client: str = ""           # clientload: which Java client (clientload.IDS)
    client_mode: str = "open"  # clientload: open (a rate), burst (`requests` at once) or park (every park_us)
    shipped: bool = False      # clientload: the client's own pool, as its library ships it (else `connections`)
    max_in_flight: int = 0     # open loops: a request that finds this many in flight is dropped (0: the tool's default)
    warmup_s: float = 0.0      # clientload: seconds at the same load in the same JVM before measuring
    warmup_rate: float = 0.0   # clientload open mode: the warm-up's rate, when not `rate`
    park_us: int = 0           # clientload park mode: the pause before each submit
    jvm_flags: tuple[str, ...] = ()  # clientload: more flags for the client's JVM (a heap, a client's setting)
    # openloop: POST this file's bytes as the body, or send them as length-prefixed frames instead
    # of HTTP (paths from the repository root, where generators run); wrk, ab and vegeta refuse both
    body_file: str = ""
    frame_file: str = ""
    close_every: int = 0       # openloop: each connection's Nth request asks Connection: close (0: never)

    @property
    def mode(self) -> str:
        return "keepalive" if self.keepalive else "close"


@dataclass
class LoadResult:
    ok: bool                   # the tool ran to the end and reported numbers
    failure: str = ""          # why not, when not ok
    requests: int = 0          # completed requests (any status)
    duration_s: float = 0.0
    rps: float = 0.0
    p50_ms: float | None = None
    p90_ms: float | None = None
    p99_ms: float | None = None
    mean_ms: float | None = None
    max_ms: float | None = None
    errors: int = 0            # every failed request: connect, read, write, timeout, non-2xx
    errors_connect: int = 0
    errors_read: int = 0
    errors_write: int = 0
    errors_timeout: int = 0
    non2xx: int = 0
    bytes: int = 0
    extra: dict = field(default_factory=dict)

    def as_row(self) -> dict:
        row = asdict(self)
        row.pop("extra")
        return row


class Driver:
    name = ""

    def argv(self, spec: LoadSpec, url: str) -> list[str]:
        raise NotImplementedError

    def env(self, spec: LoadSpec) -> dict[str, str]:
        return {}

    def parse(self, output: str, returncode: int) -> LoadResult:
        raise NotImplementedError

    def gets_only(self, spec: LoadSpec) -> None:
        """For a tool that sends only GET: refuse a spec that asks for a body or frames, rather
        than measure GETs in their place."""
        if spec.body_file or spec.frame_file:
            raise ValueError(f"{self.name} sends only GET requests: it cannot send a body (body_file) "
                             f"or frames (frame_file); use openloop")
        if spec.close_every:
            raise ValueError(f"{self.name} cannot close a connection every N requests (close_every); use openloop")

    def failed(self, returncode: int, output: str, detail: str = "") -> LoadResult:
        """A run that gave no result: the tool's exit status and its last word (or what we know)."""
        last = output.strip().splitlines()[-1] if output.strip() else "no output"
        return LoadResult(ok=False, failure=f"{self.name} exit {returncode}: {detail or last}")


def from_summary(d: dict, who: str, duration_s: float, errors: int, columns: tuple[str, ...],
                 **counts) -> LoadResult:
    """A LoadResult from a book tool's summary line `d` (ok, achieved_rps, the latency percentiles): the run
    took duration_s and the server failed `errors` requests (requests never sent, dropped, are not among them:
    they stay in extra, with every field of the line but `columns`, those LoadResult has); counts: the errors
    by kind."""
    has = d["ok"] > 0
    return LoadResult(
        ok=has, failure="" if has else f"{who}: no request answered 2xx",
        requests=d["ok"], duration_s=duration_s, rps=d["achieved_rps"],
        p50_ms=d["p50_ms"], p90_ms=d["p90_ms"], p99_ms=d["p99_ms"], mean_ms=d["mean_ms"], max_ms=d["max_ms"],
        errors=errors, non2xx=d["non2xx"], errors_timeout=d["timeouts"], **counts,
        extra={k: v for k, v in d.items() if k not in columns})


def summary_line(output: str, tag: str) -> dict | None:
    """The JSON summary a book tool prints on one line, `TAG {...}`; None when it printed none."""
    line = next((ln for ln in output.splitlines() if ln.startswith(tag + " {")), None)
    return None if line is None else json.loads(line[len(tag) + 1:])


# ---- wrk ---------------------------------------------------------------------------------

_WRK_SOCKET_ERRORS = re.compile(
    r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)")
_WRK_NON2XX = re.compile(r"Non-2xx or 3xx responses: (\d+)")


class Wrk(Driver):
    name = "wrk"

    def argv(self, spec: LoadSpec, url: str) -> list[str]:
        self.gets_only(spec)
        return ["wrk", "-t", str(spec.threads), "-c", str(spec.connections),
                # wrk reads whole seconds only ("-d 0.5s" is a usage error): a shorter window runs for 1 s
                "-d", f"{max(1, math.ceil(spec.duration_s))}s", "--timeout", f"{spec.timeout_s:g}s",
                "-s", WRK_SCRIPT, url.rstrip("/") + spec.path]

    def env(self, spec: LoadSpec) -> dict[str, str]:
        env = {"IOBENCH_CONNECTION_CLOSE": "0" if spec.keepalive else "1"}
        if spec.pipeline > 1:
            env["IOBENCH_PIPELINE"] = str(spec.pipeline)
        return env

    def parse(self, output: str, returncode: int) -> LoadResult:
        d = summary_line(output, "IOBENCH")
        if returncode != 0 or d is None:
            return self.failed(returncode, output)
        duration = d["duration_us"] / 1e6
        # wrk keeps no latency for a request that timed out: with only those, there is none
        has_latency = d["latency_max_us"] > 0
        ms = (lambda us: us / 1e3) if has_latency else (lambda us: None)
        # Pipelined, wrk records one latency per batch but ranks percentiles by responses, so
        # they read 0 (wg/wrk issue 236): only the mean and the maximum of batches are real.
        pct = ms if d.get("pipeline", 1) <= 1 else (lambda us: None)
        # wrk counts a request whose status is not 2xx/3xx as completed *and* as an error
        errors = d["errors_connect"] + d["errors_read"] + d["errors_write"] + d["errors_timeout"] + d["errors_status"]
        result = LoadResult(
            ok=True, requests=d["requests"], duration_s=duration,
            rps=d["requests"] / duration if duration > 0 else 0.0,
            p50_ms=pct(d["p50_us"]), p90_ms=pct(d["p90_us"]), p99_ms=pct(d["p99_us"]),
            mean_ms=ms(d["latency_mean_us"]), max_ms=ms(d["latency_max_us"]),
            errors=errors, errors_connect=d["errors_connect"], errors_read=d["errors_read"],
            errors_write=d["errors_write"], errors_timeout=d["errors_timeout"],
            non2xx=d["errors_status"], bytes=d["bytes"], extra={"p99_9_ms": pct(d["p99_9_us"])})
        # Cross-check with wrk's own text summary, which the raw output also holds.
        m = _WRK_SOCKET_ERRORS.search(output)
        if m and tuple(map(int, m.groups())) != (d["errors_connect"], d["errors_read"],
                                                 d["errors_write"], d["errors_timeout"]):
            raise ValueError("wrk's text and script summaries disagree on socket errors")
        m = _WRK_NON2XX.search(output)
        if (int(m.group(1)) if m else 0) != d["errors_status"]:
            raise ValueError("wrk's text and script summaries disagree on non-2xx responses")
        if result.requests == 0:
            result.ok = False
            result.failure = "wrk completed no request"
        return result


# ---- ab ----------------------------------------------------------------------------------

def _ab_field(output: str, label: str, cast=float):
    m = re.search(rf"^{re.escape(label)}:\s+([\d.]+)", output, re.MULTILINE)
    return cast(m.group(1)) if m else None


def ab_connection_times(output: str) -> dict[str, dict[str, float]]:
    """ab's "Connection Times (ms)" table: for Connect, Processing, Waiting and Total, the
    min, mean, sd, median and max over the requests that *completed*. A closed loop's
    clients spend c x duration in requests; what completed requests account for less
    than that was spent in requests still unanswered when ab stopped, which no other
    number of its output counts."""
    rows = re.findall(r"^(Connect|Processing|Waiting|Total):\s+(\d+)\s+(\d+)\s+([\d.]+)\s+(\d+)\s+(\d+)",
                      output, re.MULTILINE)
    keys = ("min", "mean", "sd", "median", "max")
    return {name: dict(zip(keys, map(float, values))) for name, *values in rows}


def unfinished_share(output: str, connections: int) -> float | None:
    """The share of the clients' time (connections x duration) spent in requests that had no
    answer when ab stopped: 1 - completed x mean time of a completed request / (c x duration)."""
    total = ab_connection_times(output).get("Total")
    done = _ab_field(output, "Complete requests", int)
    taken = _ab_field(output, "Time taken for tests")
    if total is None or not done or not taken:
        return None
    return max(0.0, 1.0 - done * total["mean"] / 1000.0 / (connections * taken))


class Ab(Driver):
    """ApacheBench: HTTP/1.0, count-bound; without -k every request is a new connection."""
    name = "ab"

    def argv(self, spec: LoadSpec, url: str) -> list[str]:
        self.gets_only(spec)
        if spec.requests:  # count-bound, as the source write-ups ran it
            argv = ["ab", "-n", str(spec.requests)]
        else:  # time-bound: -t implies -n 50000, so a large -n must come after it
            argv = ["ab", "-t", f"{max(1, round(spec.duration_s))}", "-n", "10000000"]
        argv += ["-c", str(spec.connections), "-s", f"{max(1, round(spec.timeout_s))}"]
        if spec.keepalive:
            argv.append("-k")
        return argv + [url.rstrip("/") + spec.path]

    def parse(self, output: str, returncode: int) -> LoadResult:
        complete = _ab_field(output, "Complete requests", int)
        if returncode != 0 or complete is None:
            # ab stops at the first socket error it cannot ignore and says why
            errors = (re.findall(r"apr_\w+.*", output)
                      or re.findall(r"[^\n]*(?:Connection refused|timed? ?out|error)[^\n]*", output, re.IGNORECASE))
            done = re.search(r"Total of (\d+) requests completed", output)
            msg = errors[-1].strip() if errors else (output.strip().splitlines() or ["no output"])[-1]
            return LoadResult(ok=False, failure=f"ab exit {returncode}: {msg}",
                              requests=int(done.group(1)) if done else 0)
        failed = _ab_field(output, "Failed requests", int) or 0
        non2xx = _ab_field(output, "Non-2xx responses", int) or 0
        breakdown = re.search(r"\(Connect: (\d+), Receive: (\d+), Length: (\d+), Exceptions: (\d+)\)", output)
        connect, receive, length, exceptions = map(int, breakdown.groups()) if breakdown else (0, 0, 0, 0)
        percentiles = dict(re.findall(r"^\s+(\d+)%\s+(\d+)", output, re.MULTILINE))
        return LoadResult(
            ok=True, requests=complete,
            duration_s=_ab_field(output, "Time taken for tests") or 0.0,
            rps=_ab_field(output, "Requests per second") or 0.0,
            p50_ms=float(percentiles["50"]) if "50" in percentiles else None,
            p90_ms=float(percentiles["90"]) if "90" in percentiles else None,
            p99_ms=float(percentiles["99"]) if "99" in percentiles else None,
            mean_ms=_ab_field(output, "Time per request"),  # the first one: mean over concurrent requests
            max_ms=float(percentiles["100"]) if "100" in percentiles else None,
            # "Length" failures only mean the body length varied, which ab cannot tell from an error
            errors=connect + receive + exceptions + non2xx,
            errors_connect=connect, errors_read=receive + exceptions, non2xx=non2xx,
            bytes=_ab_field(output, "Total transferred", int) or 0,
            extra={"failed_requests": failed, "length_failures": length,
                   "keepalive_requests": _ab_field(output, "Keep-Alive requests", int) or 0})


# ---- iom-openloop (code/c/tools/openloop.c) -----------------------------------------------

OPENLOOP = "code/c/build/iom-openloop"


class OpenLoop(Driver):
    """The book's HTTP generator. With a rate, an open loop: every request has an intended
    start fixed in advance, and its latency counts from then; a request that finds
    --max-in-flight requests in flight is dropped, never sent late. With rate 0, a closed
    loop like wrk's: each connection keeps `pipeline` requests outstanding.
    GET by default; POST with spec.body_file; length-prefixed frames with spec.frame_file.
    Every offered request ends one way: ok, non2xx, timeout, connect error, reset or dropped."""
    name = "openloop"

    def argv(self, spec: LoadSpec, url: str) -> list[str]:
        argv = [OPENLOOP] + (["--rate", f"{spec.rate:g}"] if spec.rate > 0 else ["--closed"])
        if spec.rate > 0 and spec.max_in_flight:
            argv += ["--max-in-flight", str(spec.max_in_flight)]
        argv += ["--connections", str(spec.connections), "--pipeline", str(spec.pipeline),
                 "--duration", f"{spec.duration_s:g}", "--timeout", f"{spec.timeout_s:g}"]
        if not spec.keepalive:
            argv.append("--close")
        if spec.close_every:
            argv += ["--close-every", str(spec.close_every)]
        if spec.frame_file and (spec.body_file or not spec.keepalive):  # as the tool would, before any run
            raise ValueError("openloop: frames carry no body and no Connection: close (frame_file with "
                             + ("body_file)" if spec.body_file else "keepalive=False)"))
        if spec.body_file:
            argv += ["--body-file", spec.body_file]
        if spec.frame_file:
            argv += ["--frame", spec.frame_file]
        if spec.hist:
            argv += ["--hist", spec.hist]
        return argv + [url.rstrip("/") + spec.path]

    # the OPENLOOP line's fields that LoadResult has columns for; the rest go to `extra`
    _COLUMNS = ("ok", "duration_s", "achieved_rps", "p50_ms", "p90_ms", "p99_ms", "mean_ms", "max_ms",
                "non2xx", "timeouts", "errors_connect", "resets")

    def parse(self, output: str, returncode: int) -> LoadResult:
        d = summary_line(output, "OPENLOOP")
        if returncode != 0 or d is None:
            return self.failed(returncode, output)
        return from_summary(d, "openloop", d["duration_s"],
                            d["non2xx"] + d["timeouts"] + d["errors_connect"] + d["resets"], self._COLUMNS,
                            errors_connect=d["errors_connect"], errors_read=d["resets"])


# ---- iom-echoload (code/c/tools/echoload.c) -----------------------------------------------

ECHOLOAD = "code/c/build/iom-echoload"


class EchoLoad(Driver):
    """The book's closed-loop TCP echo generator: one message in flight per connection;
    a message's latency runs from its first byte written to its last byte echoed back.
    Its url is tcp://host:port; a request is one echoed message."""
    name = "echo"

    def argv(self, spec: LoadSpec, url: str) -> list[str]:
        if spec.size <= 0:
            raise ValueError("the echo driver needs a message size")
        host, _, port = url.removeprefix("tcp://").rstrip("/").rpartition(":")
        argv = [ECHOLOAD, "--host", host, "--port", port, "--connections", str(spec.connections),
                "--size", str(spec.size), "--duration", f"{spec.duration_s:g}",
                "--timeout", f"{spec.timeout_s:g}", "--hist"]
        if spec.nodelay:
            argv.append("--nodelay")
        every, at, pause_us = spec.split
        if every:
            argv += ["--split-every", str(every), "--split-at", str(at), "--split-pause-us", str(pause_us)]
        return argv

    def parse(self, output: str, returncode: int) -> LoadResult:
        d = summary_line(output, "ECHOLOAD")
        if d is None:
            return self.failed(returncode, output)
        has = d["messages"] > 0
        errors = (d["errors_connect"] + d["errors_read"] + d["errors_write"]
                  + d["errors_timeout"] + d["errors_mismatch"])
        ok = returncode == 0 and has
        ms = (lambda k: d[k]) if has else (lambda k: None)
        return LoadResult(
            ok=ok, failure="" if ok else f"echoload exit {returncode}: {d['messages']} messages",
            requests=d["messages"], duration_s=d["duration_s"], rps=d["tps"],
            p50_ms=ms("p50_ms"), p90_ms=ms("p90_ms"), p99_ms=ms("p99_ms"), mean_ms=ms("mean_ms"),
            max_ms=ms("max_ms"), errors=errors, errors_connect=d["errors_connect"],
            errors_read=d["errors_read"], errors_write=d["errors_write"], errors_timeout=d["errors_timeout"],
            bytes=round(d["bytes_per_s"] * d["duration_s"]),
            extra={"bytes_per_s": d["bytes_per_s"], "p99_9_ms": ms("p99_9_ms"),
                   "stalls_35ms": d["stalls_35ms"], "errors_mismatch": d["errors_mismatch"],
                   "hist": d.get("hist", [])})


# ---- vegeta (the cross-check of iom-openloop) ---------------------------------------------------

class Vegeta(Driver):
    """vegeta attack through code/tools/vegeta-load: an open loop at spec.rate with at most
    spec.connections connections; a request that finds them all busy waits inside Go's client,
    and its latency includes that wait (from when vegeta's pacer released it)."""
    name = "vegeta"

    def argv(self, spec: LoadSpec, url: str) -> list[str]:
        self.gets_only(spec)
        return ["code/tools/vegeta-load", f"{spec.rate:g}", f"{spec.duration_s:g}", f"{spec.timeout_s:g}",
                str(spec.connections), spec.mode, url.rstrip("/") + spec.path]

    def parse(self, output: str, returncode: int) -> LoadResult:
        d = summary_line(output, "VEGETA")
        if returncode != 0 or d is None:
            return self.failed(returncode, output)
        codes = {int(k): v for k, v in d["status_codes"].items()}
        ok = sum(v for k, v in codes.items() if 200 <= k < 300)
        non2xx = sum(v for k, v in codes.items() if k and not 200 <= k < 300)
        lat = d["latencies"]
        ms = (lambda k: lat[k] / 1e6) if ok else (lambda k: None)
        return LoadResult(
            ok=ok > 0, failure="" if ok else f"vegeta: no request answered 2xx: {d['errors'][:1]}",
            # the whole run: the attack, then the wait for its last answers (throughput's denominator)
            requests=ok, duration_s=(d["duration"] + d["wait"]) / 1e9, rps=d["throughput"],
            p50_ms=ms("50th"), p90_ms=ms("90th"), p99_ms=ms("99th"), mean_ms=ms("mean"), max_ms=ms("max"),
            # status 0: no answer (a timeout, or a connection that failed: its report does not say which)
            errors=d["requests"] - ok, non2xx=non2xx, errors_timeout=codes.get(0, 0),
            # vegeta never drops a request: past its ceiling it sends late
            extra={"offered": d["requests"], "offered_rps": d["rate"], "p95_ms": ms("95th"), "dropped": 0,
                   "transport_errors": codes.get(0, 0), "error_set": d["errors"], "wait_s": d["wait"] / 1e9})


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
        if not (clientload.CLIENTS / "target" / "classes").is_dir():
            raise RuntimeError(f"the Java clients are not built: make {' '.join(clientload.CLIENTS_BUILD)}")
        if spec.client not in clientload.IDS:
            raise ValueError(f"unknown client {spec.client!r}; known: {', '.join(clientload.IDS)}")
        gc_log = [f"-Xlog:gc:file={clientload.beside_hlog(spec.hist, 'gc_log')}:uptime"] if spec.hist else []
        argv = [str(java_home() / "bin" / "java"), *clientload.CLIENT_JAVA_FLAGS, *spec.jvm_flags, *gc_log,
                "-cp", clientload.CLIENTS_CLASSPATH, "iom.clients.OpenLoad",
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
            argv += ["--hlog", spec.hist, "--thread-dump", clientload.beside_hlog(spec.hist, "thread_dump"),
                     "--timeline", clientload.beside_hlog(spec.hist, "timeline")]
        return argv + [url.rstrip("/") + spec.path]

    # the CLIENTLOAD line's fields that LoadResult has columns for; the rest go to `extra`
    _COLUMNS = ("ok", "achieved_rps", "p50_ms", "p90_ms", "p99_ms", "mean_ms", "max_ms", "non2xx", "timeouts")

    def parse(self, output: str, returncode: int) -> LoadResult:
        d = summary_line(output, "CLIENTLOAD")
        if returncode != 0 or d is None:
            return self.failed(returncode, output)
        return from_summary(d, d["client"], d["elapsed_s"], d["non2xx"] + d["timeouts"] + d["rejected"] + d["errors"],
                            self._COLUMNS)


DRIVERS: dict[str, Driver] = {d.name: d for d in (Wrk(), Ab(), OpenLoop(), EchoLoad(), Vegeta(), ClientLoad())}


# What each generator needs on the machine it runs on (a program on PATH, or a path in the checkout): what
# hosts.Host.check looks for on a client host before a run.
PROGRAMS = {"wrk": ("wrk",), "ab": ("ab",), "openloop": (OPENLOOP,), "echo": (ECHOLOAD,),
            "vegeta": ("code/tools/vegeta-load", ".cache/go/bin/vegeta"),
            "clientload": ("code/java/clients/target/classes",)}


def programs(tools) -> list[str]:
    """The programs the named generators need, each once, in order (the Java clients: this machine's JDK too, at the
    same path, since their command line names it)."""
    found = [p for tool in tools for p in PROGRAMS.get(tool, (tool,))]
    if "clientload" in tools:
        try:
            found.append(str(java_home() / "bin" / "java"))
        except (OSError, RuntimeError):
            pass
    return list(dict.fromkeys(found))


def get(name: str) -> Driver:
    try:
        return DRIVERS[name]
    except KeyError:
        raise KeyError(f"unknown load tool {name!r}; known: {', '.join(sorted(DRIVERS))}") from None


def parse_raw(tool: str, text: str) -> LoadResult:
    """A raw file raw_text wrote, read back through its generator's own parser (a failed run: ok False)."""
    _, _, rest = text.partition("\n# exit: ")
    code, _, output = rest.partition("\n")
    return get(tool).parse(output, int(code or 1))
