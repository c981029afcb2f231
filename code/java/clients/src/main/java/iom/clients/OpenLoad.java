package iom.clients;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import org.HdrHistogram.Histogram;

/**
 * An open-loop load driver for one HTTP client (Chapter A), after wrk2: request i is intended at
 * t0 + i/rate whatever the answers do, and its latency counts from then, so a stall is charged to
 * every request it delayed (no coordinated omission). A request that finds --max-in-flight
 * requests in flight is dropped and counted, never sent late. Two more modes redo source write-up
 * 003's methods: --mode burst (K requests at once, no bound) and --mode park (its JMH shape).
 *
 * Build: make -C code clients. Run: "$(code/tools/find-jdk)/bin/java" -jar
 * code/java/clients/target/iom-clients.jar --client jetty --rate 1000 --duration 10 URL
 * (every option: run it with no arguments). Output: one line "CLIENTLOAD {json}" on stdout, one
 * line for people on stderr; exit 0 once a run completed (even if every request failed), 2 on a
 * bad command line, 1 when the client or the log file cannot be set up.
 */
public final class OpenLoad {
    /** One request: the time its latency counts from, its phase; true once counted. */
    private static final class Req extends AtomicBoolean {
        private static final long serialVersionUID = 1L;
        final long start;
        final boolean measured;

        Req(long start, boolean measured) {
            this.start = start;
            this.measured = measured;
        }
    }

    private final LoadOptions o;
    private final Driver driver;
    private final Tally warm = new Tally(), main = new Tally();
    private final Histogram sendLag = new Histogram(1, LatencyLog.HIGHEST_US, LatencyLog.DIGITS); // sender's only
    private final Set<Req> pending = ConcurrentHashMap.newKeySet();
    private final Map<String, LongAdder> errorKinds = new ConcurrentHashMap<>();
    private final AtomicInteger inFlight = new AtomicInteger();
    private final ThreadCensus census = new ThreadCensus();
    private final com.sun.management.OperatingSystemMXBean os =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    private int inFlightMax;                 // the sending thread's alone, as lastSent
    private long lastSent;
    private long cpuStart = -1, cpuEnd, windowEnd;
    private boolean threadDumped;
    private long pssAtEnd = -1;           // the client's PSS when its run has ended (KiB)
    /** How many times any run has read its PSS (a test's view: once per run, after it). */
    static final java.util.concurrent.atomic.AtomicInteger PSS_READS = new java.util.concurrent.atomic.AtomicInteger();
    private LatencyLog latency; // OK requests of the measured window, from their intended start

    OpenLoad(LoadOptions o, Driver driver) {
        this.o = o;
        this.driver = driver;
    }

    /** Runs the load and returns what CLIENTLOAD prints. */
    Map<String, Object> run() throws IOException, InterruptedException {
        ScheduledExecutorService sampler = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "openload-sampler");
            t.setDaemon(true);
            return t;
        });
        sampler.scheduleAtFixedRate(census::sample, 0, 100, TimeUnit.MILLISECONDS);
        boolean burst = o.mode().equals("burst");
        long t0 = System.nanoTime() + 50_000_000L;            // the first request, 50 ms from now
        Timeline timeline = o.timeline() == null ? null : new Timeline(o.timeline(), t0, this::counts, driver);
        if (timeline != null) {
            sampler.scheduleAtFixedRate(timeline::sample, 0, 100, TimeUnit.MILLISECONDS);
        }
        long tm = t0 + nanos(burst ? 0 : o.warmupS()); // the measured window opens
        long tEnd = tm + nanos(burst ? 0 : o.durationS());
        latency = new LatencyLog(o.hlog(), System.currentTimeMillis() + (tm - System.nanoTime()) / 1_000_000,
                "OpenLoad " + driver.id() + " " + driver.version() + " " + o.mode() + ": latency of OK requests"
                        + " in microseconds, from each one's intended start; max column in ms");
        sampler.scheduleAtFixedRate(latency::interval, Math.max(0, tm - System.nanoTime()) + 1_000_000_000L,
                1_000_000_000L, TimeUnit.NANOSECONDS);
        ScheduledFuture<?> dump = o.threadDump() == null ? null : sampler.schedule(
                () -> census.dump(o.threadDump(), "OpenLoad " + driver.id() + " " + driver.version() + " " + o.mode()
                        + ": every thread, " + (burst ? "1 s after the burst started" : "halfway through the measured window")),
                (burst ? t0 + 1_000_000_000L : tm + (tEnd - tm) / 2) - System.nanoTime(), TimeUnit.NANOSECONDS);
        switch (o.mode()) {
            case "open" -> open(t0, tm, tEnd);
            case "park" -> park(t0, tm, tEnd);
            default -> burst(t0);
        }
        // Any request still pending past its timeout and 1 s of grace (duration + timeout + 1 s
        // in all, from the last send) is counted a timeout here: a client as shipped may have no
        // timeout at all.
        drain(Math.max(lastSent, tEnd) + nanos(o.timeoutS()) + 1_000_000_000L);
        windowEnd = System.nanoTime();
        if (burst) {
            cpuEnd = os.getProcessCpuTime();
        }
        if (dump != null) {
            dump.cancel(false); // a burst over within a second has no dump
            threadDumped = dump.state() == Future.State.SUCCESS;
        }
        sampler.shutdown();
        sampler.awaitTermination(10, TimeUnit.SECONDS);
        if (timeline != null) {
            timeline.sample(); // the last line: every request counted
            timeline.close();
        }
        Histogram total = latency.close(); // with the last, partial interval
        census.sample();
        // Read once, after the run: the kernel walks every page table of the process to answer, on the
        // client's own core (1-2 % of it at a second's interval with a heap of 1 GiB): never while measuring.
        pssAtEnd = pssKib();
        warm.check("warmup");
        main.check("measured");
        return result(tm, total);
    }

    /**
     * This process's proportional set size now, in KiB (the kernel's Pss in /proc/self/smaps_rollup,
     * as the harness reads a server's), or -1 where it cannot be read.
     */
    static long pssKib() {
        PSS_READS.incrementAndGet();
        try {
            for (String line : java.nio.file.Files.readAllLines(java.nio.file.Path.of("/proc/self/smaps_rollup"))) {
                if (line.startsWith("Pss:")) {
                    return Long.parseLong(line.replaceAll("\\D", ""));
                }
            }
        } catch (IOException | RuntimeException e) {
            // not Linux, or not readable: no reading
        }
        return -1;
    }

    /** Both phases' requests so far, for the timeline: sent, answered (ok), ended otherwise, in flight. */
    private Map<String, Long> counts() {
        Map<String, Long> c = new LinkedHashMap<>();
        c.put("sent", warm.sent.sum() + main.sent.sum());
        c.put("ok", warm.get(Outcome.OK) + main.get(Outcome.OK));
        c.put("failed", warm.failed() + main.failed());
        c.put("in_flight", (long) inFlight.get());
        return c;
    }

    /** Request i at t0 + i/rate; dropped when --max-in-flight are in flight. The warm-up (t0 to tm)
     * runs at --warmup-rate, which is --rate unless asked otherwise. */
    private void open(long t0, long tm, long tEnd) {
        schedule(t0, tm, o.warmupRate(), false);
        schedule(tm, tEnd, o.rate(), true);
        cpuEnd = os.getProcessCpuTime();
    }

    private void schedule(long from, long to, double rate, boolean measured) {
        long intended;
        for (long i = 0; (intended = from + (long) (i * 1e9 / rate)) < to; i++) {
            long now = waitUntil(intended);
            Tally t = measured ? main : warm;
            if (measured && cpuStart < 0) {
                openWindow();
            }
            t.offered.increment();
            if (inFlight.get() >= o.maxInFlight()) {
                t.dropped.increment();
                continue;
            }
            if (measured) {
                sendLag.recordValue(LatencyLog.us(now - intended));
            }
            send(new Req(intended, measured));
        }
    }

    /** Write-up 003's JMH benchmark (@Threads(1)): park P us, submit one request, never wait. */
    private void park(long t0, long tm, long tEnd) {
        waitUntil(t0);
        long now;
        while (true) {
            LockSupport.parkNanos(o.parkUs() * 1000);
            if ((now = System.nanoTime()) >= tEnd) {
                break;
            }
            boolean measured = now >= tm;
            if (measured && cpuStart < 0) {
                openWindow();
            }
            (measured ? main : warm).offered.increment();
            send(new Req(now, measured));
        }
        cpuEnd = os.getProcessCpuTime();
    }

    /** Write-up 003's manual loop: K requests as fast as one thread submits them, no bound. */
    private void burst(long t0) {
        waitUntil(t0);
        openWindow();
        for (int k = 0; k < o.requests(); k++) {
            main.offered.increment();
            send(new Req(System.nanoTime(), true));
        }
    }

    private void openWindow() {
        latency.restart(); // nothing measured yet: the first interval starts now
        cpuStart = os.getProcessCpuTime();
    }

    private void send(Req r) {
        int now = inFlight.incrementAndGet();
        if (r.measured) { // the warm-up's cold start left out; its requests still in flight count
            inFlightMax = Math.max(inFlightMax, now);
        }
        lastSent = System.nanoTime();
        pending.add(r);
        (r.measured ? main : warm).sent.increment();
        CompletableFuture<Driver.Response> f;
        try {
            f = driver.get(o.uri());
        } catch (RuntimeException e) { // a client that refuses in the caller's thread
            f = CompletableFuture.failedFuture(e);
        }
        f.whenComplete((response, e) -> end(r, response, e));
    }

    private void end(Req r, Driver.Response response, Throwable e) {
        long now = System.nanoTime();
        if (!r.compareAndSet(false, true)) {
            return; // already counted a timeout by drain
        }
        inFlight.decrementAndGet();
        Outcome outcome = e == null ? Outcome.of(response) : Outcome.of(e);
        (r.measured ? main : warm).add(outcome);
        if (r.measured && outcome == Outcome.OK) {
            latency.record(now - r.start);
        } else if (r.measured && e != null) {
            errorKinds.computeIfAbsent(Outcome.kind(e), k -> new LongAdder()).increment();
        }
        pending.remove(r); // last: once nothing is pending, every count and latency is in
    }

    private void drain(long cutoff) {
        while (!pending.isEmpty() && System.nanoTime() < cutoff) {
            LockSupport.parkNanos(2_000_000);
        }
        for (Req r : pending) {
            if (r.compareAndSet(false, true)) {
                (r.measured ? main : warm).add(Outcome.TIMEOUT);
                if (r.measured) {
                    errorKinds.computeIfAbsent("PendingAtCutoff", k -> new LongAdder()).increment();
                }
                pending.remove(r);
            }
        }
        while (!pending.isEmpty()) { // those that ended during the sweep finish counting
            LockSupport.parkNanos(1_000_000);
        }
    }

    private Map<String, Object> result(long tm, Histogram total) {
        boolean open = o.mode().equals("open"), burst = o.mode().equals("burst");
        double elapsed = (windowEnd - tm) / 1e9, window = burst ? elapsed : o.durationS();
        long ok = main.get(Outcome.OK), answered = ok + main.get(Outcome.NON_2XX);
        double cpu = cpuStart < 0 ? 0 : (cpuEnd - cpuStart) / 1e9; // no measured request: no window
        boolean any = total.getTotalCount() > 0;
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("mode", o.mode());
        r.put("client", driver.id());
        r.put("client_version", driver.version());
        r.put("java_version", Runtime.version().toString());
        r.put("rate", open ? o.rate() : null);
        r.put("warmup_rate", open ? o.warmupRate() : null);
        r.put("connections", o.shipped() ? null : o.connections());
        r.put("io_threads", o.shipped() ? null : o.ioThreads());
        r.put("shipped", o.shipped());
        r.put("max_in_flight", open ? o.maxInFlight() : null);
        r.put("duration_s", burst ? null : o.durationS());
        r.put("warmup_s", burst ? null : o.warmupS());
        r.put("timeout_s", o.timeoutS());
        r.put("elapsed_s", round(elapsed, 3));
        r.put("offered", main.offered.sum());
        r.put("sent", main.sent.sum());
        r.put("ok", ok);
        r.put("non2xx", main.get(Outcome.NON_2XX));
        r.put("timeouts", main.get(Outcome.TIMEOUT));
        r.put("rejected", main.get(Outcome.REJECTED));
        r.put("errors", main.get(Outcome.ERROR));
        r.put("dropped", main.dropped.sum());
        r.put("achieved_rps", round(ok / window, 1));
        for (double p : new double[] {50, 90, 99, 99.9}) {
            r.put("p" + (p == 99.9 ? "99_9" : String.valueOf((int) p)) + "_ms",
                    any ? ms(total.getValueAtPercentile(p)) : null);
        }
        r.put("max_ms", any ? ms(total.getMaxValue()) : null);
        r.put("mean_ms", any ? round(total.getMean() / 1000.0, 3) : null);
        boolean lag = open && sendLag.getTotalCount() > 0;
        r.put("send_lag_p99_ms", lag ? ms(sendLag.getValueAtPercentile(99)) : null);
        r.put("send_lag_max_ms", lag ? ms(sendLag.getMaxValue()) : null);
        r.put("in_flight_max", inFlightMax);
        r.put("cpu_s", round(cpu, 3));
        r.put("cpu_us_per_req", answered > 0 ? round(cpu * 1e6 / answered, 1) : null); // per answered request
        r.put("threads_max", census.max());
        r.put("thread_groups", census.groups());
        r.put("pss_kib", pssAtEnd > 0 ? pssAtEnd : null);
        Map<String, Long> kinds = new LinkedHashMap<>();
        errorKinds.entrySet().stream().sorted((a, b) -> Long.compare(b.getValue().sum(), a.getValue().sum()))
                .limit(5).forEach(e -> kinds.put(e.getKey(), e.getValue().sum()));
        r.put("error_kinds", kinds);
        r.put("hlog", o.hlog());
        r.put("thread_dump", threadDumped ? o.threadDump() : null);
        r.put("timeline", o.timeline());
        Map<String, Long> warmup = new LinkedHashMap<>();
        warmup.put("offered", warm.offered.sum());
        warmup.put("ok", warm.get(Outcome.OK));
        warmup.put("failed", warm.failed());
        warmup.put("dropped", warm.dropped.sum());
        r.put("warmup", warmup);
        if (o.mode().equals("park")) {
            r.put("submits", main.offered.sum());
            r.put("submit_rps", round(main.offered.sum() / window, 1));
        }
        if (burst) {
            r.put("requests", o.requests());
        }
        return r;
    }

    private static long waitUntil(long deadline) {
        long now;
        while ((now = System.nanoTime()) < deadline) {
            LockSupport.parkNanos(deadline - now);
        }
        return now;
    }

    private static long nanos(double seconds) {
        return Math.round(seconds * 1e9);
    }

    private static double ms(long us) {
        return us / 1000.0;
    }

    private static double round(double v, int digits) {
        double scale = Math.pow(10, digits);
        return Math.round(v * scale) / scale;
    }

    public static void main(String[] args) {
        LoadOptions o = null;
        try {
            o = LoadOptions.parse(args);
        } catch (LoadOptions.Usage e) {
            System.err.print(args.length == 0 ? LoadOptions.USAGE : "");
            System.err.println("OpenLoad: " + e.getMessage() + (args.length == 0 ? "" : " (no arguments: usage)"));
            System.exit(2);
        }
        // The summary's writer, loaded now: a burst can take every file descriptor the process may
        // have, and a class loaded after that cannot be read from its jar (NoClassDefFoundError).
        JsonLine.of(Map.of());
        Driver d = null;
        Map<String, Object> r = null;
        try {
            d = Drivers.open(o.client(), o.pool());
            r = new OpenLoad(o, d).run();
        } catch (IllegalStateException e) { // Tally.check: a bug in this program, not in the client
            System.err.println("OpenLoad: the counts do not add up: " + e.getMessage());
            System.exit(70);
        } catch (Exception e) {
            System.err.println("OpenLoad: cannot run " + o.client() + ": " + e);
            System.exit(1);
        } finally {
            Drivers.close(d, 5000);
        }
        System.out.println("CLIENTLOAD " + JsonLine.of(r));
        System.err.println(String.format("OpenLoad %s %s %s: offered %s, ok %s, non-2xx %s, timeouts %s, rejected %s,"
                + " errors %s, dropped %s; p50 %s ms, p99 %s ms, max %s ms; %s ok/s; CPU %s s (%s us/request);"
                + " %s threads", r.get("client"), r.get("client_version"), r.get("mode"), r.get("offered"), r.get("ok"),
                r.get("non2xx"), r.get("timeouts"), r.get("rejected"), r.get("errors"), r.get("dropped"),
                r.get("p50_ms"), r.get("p99_ms"), r.get("max_ms"), r.get("achieved_rps"), r.get("cpu_s"),
                r.get("cpu_us_per_req"), r.get("threads_max")));
        System.exit(0);
    }
}
