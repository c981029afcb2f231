package iom.clients;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import java.net.URI;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.HdrHistogram.EncodableHistogram;
import org.HdrHistogram.HistogramLogReader;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * OpenLoad against a server that counts what reaches it: every offered request is accounted for
 * once; a full in-flight bound drops requests instead of sending them late; latency counts from
 * the intended start, so a stall (the server's, or the sender's own) is charged to every request
 * it delayed; non-2xx responses are counted; the .hlog holds every OK latency; a burst is
 * accounted for. The rate accounting runs for every client, the rest for an event-loop client
 * (Jetty) and a thread-per-call one (OkHttp).
 */
class OpenLoadTest {
    static final AtomicInteger stallArrivals = new AtomicInteger(), seen = new AtomicInteger();
    static final AtomicLong stallFrom = new AtomicLong(), stallUntil = new AtomicLong();

    @RegisterExtension
    static final CountingServer server = new CountingServer(OpenLoadTest::answer);

    /** A test for an event-loop client (Jetty) and a thread-per-call one (OkHttp). */
    @Target(ElementType.METHOD)
    @Retention(RetentionPolicy.RUNTIME)
    @ParameterizedTest
    @ValueSource(strings = {"jetty", "okhttp"})
    @interface JettyAndOkHttp {}

    @BeforeEach
    void reset() {
        server.peak.set(0);
        seen.set(0);
        stallArrivals.set(0);
        stallFrom.set(Long.MAX_VALUE);
        stallUntil.set(0);
    }

    /**
     * /?ms=M answers "ok" after M ms; /fail answers 503; /stall?at=N holds every request for
     * 500 ms from the N-th one on, once (and counts the requests that arrive meanwhile).
     */
    static CountingServer.Answer answer(HttpExchange x) throws InterruptedException {
        String path = x.getRequestURI().getPath(), query = String.valueOf(x.getRequestURI().getQuery());
        long now = System.nanoTime();
        if (path.equals("/stall")) {
            if (seen.incrementAndGet() == Integer.parseInt(query.substring(3))) {
                stallFrom.set(now);
                stallUntil.set(now + 500_000_000L);
            }
            if (now >= stallFrom.get() && now < stallUntil.get()) {
                stallArrivals.incrementAndGet();
            }
            long wait = stallUntil.get() - System.nanoTime();
            if (wait > 0) {
                Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
            }
        } else if (query.startsWith("ms=")) {
            Thread.sleep(Long.parseLong(query.substring(3)));
        }
        return new CountingServer.Answer(path.equals("/fail") ? 503 : 200, "ok".getBytes());
    }

    static String url(String pathAndQuery) {
        return server.url(pathAndQuery);
    }

    /** Runs OpenLoad with these arguments, and checks that its result accounts for every offered request. */
    static Map<String, Object> load(String... args) throws Exception {
        LoadOptions o = LoadOptions.parse(args);
        try (Driver d = Drivers.open(o.client(), o.pool())) {
            Map<String, Object> r = new OpenLoad(o, d).run();
            assertAccounted(r);
            return r;
        }
    }

    static long n(Map<String, Object> r, String key) {
        return ((Number) r.get(key)).longValue();
    }

    static double ms(Map<String, Object> r, String key) {
        return ((Number) r.get(key)).doubleValue();
    }

    static void assertAccounted(Map<String, Object> r) {
        long ended = n(r, "ok") + n(r, "non2xx") + n(r, "timeouts") + n(r, "rejected") + n(r, "errors");
        assertEquals(n(r, "offered"), ended + n(r, "dropped"), "every offered request ends once: " + r);
        assertEquals(n(r, "offered"), n(r, "sent") + n(r, "dropped"), r.toString());
    }

    static List<String> ids() {
        return Drivers.IDS;
    }

    @ParameterizedTest
    @MethodSource("ids")
    void everyRequestOfferedAtTheRateIsAccountedFor(String id) throws Exception {
        Map<String, Object> r = load("--client", id, "--rate", "200", "--duration", "1", "--connections", "4",
                url("/"));
        long offered = n(r, "offered");
        assertTrue(offered >= 199 && offered <= 201, "offered " + offered);
        assertEquals(offered, n(r, "ok"), r.toString());
        assertEquals(id, r.get("client"));
        assertTrue(!"unknown".equals(r.get("client_version")), r.toString());
    }

    @Test
    void theWarmUpRunsAtItsOwnRateAndTheMeasuredWindowAtTheRate() throws Exception {
        Map<String, Object> r = load("--client", "jetty", "--rate", "200", "--warmup-rate", "50", "--warmup", "1",
                "--duration", "1", "--connections", "4", url("/"));
        @SuppressWarnings("unchecked")
        Map<String, Object> warm = (Map<String, Object>) r.get("warmup");
        assertTrue(Math.abs(n(warm, "offered") - 50) <= 1, "warm-up at 50/s for 1 s: " + warm);
        assertTrue(Math.abs(n(r, "offered") - 200) <= 1, "measured at 200/s for 1 s: " + r);
        assertEquals(50.0, ms(r, "warmup_rate"), 0.0);
    }

    @JettyAndOkHttp
    void aFullInFlightBoundDropsRequestsAndNeverSendsMore(String id) throws Exception {
        Map<String, Object> r = load("--client", id, "--rate", "100", "--duration", "1", "--connections", "8",
                "--max-in-flight", "5", url("/?ms=300"));
        assertTrue(n(r, "dropped") >= 70, "5 in flight of 300 ms each send about 20 of 100: " + r);
        assertEquals(n(r, "sent"), n(r, "ok"), r.toString());
        assertTrue(server.peak.get() <= 5, "the server saw " + server.peak.get() + " at once");
        assertTrue(n(r, "in_flight_max") <= 5, r.toString());
    }

    @JettyAndOkHttp
    void aServerStallIsChargedToEveryRequestItDelayed(String id) throws Exception {
        // At 100/s, the 60th request stalls the server 500 ms: 4 connections let only 4 requests
        // reach it meanwhile, but the 50 intended then wait too, and count from their intended start.
        Map<String, Object> r = load("--client", id, "--rate", "100", "--duration", "2", "--connections", "4",
                url("/stall?at=60"));
        assertTrue(stallArrivals.get() <= 4, stallArrivals.get() + " requests reached the server in the stall");
        assertTrue(ms(r, "p99_ms") >= 400, "p99 " + r.get("p99_ms") + " ms: " + r);
        assertTrue(ms(r, "p90_ms") < 400, "p90 " + r.get("p90_ms") + " ms: only a quarter of the requests waited");
    }

    @Test
    void aSenderStallIsChargedToEveryRequestItDelayed() throws Exception {
        // The sending thread itself stops for 500 ms once (a GC pause; AHC blocking in execute()):
        // the requests it sends late count from when they were intended, not from when they left.
        LoadOptions o = LoadOptions.parse("--client", "jetty", "--rate", "100", "--duration", "2", url("/"));
        AtomicInteger calls = new AtomicInteger();
        try (Driver jetty = Drivers.open("jetty", o.pool()); Driver stalling = new Driver() {
            public String id() {
                return "jetty";
            }

            public String version() {
                return jetty.version();
            }

            public CompletableFuture<Response> get(URI uri) {
                if (calls.incrementAndGet() == 60) {
                    try {
                        Thread.sleep(500);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
                return jetty.get(uri);
            }

            public void close() {}
        }) {
            Map<String, Object> r = new OpenLoad(o, stalling).run();
            assertAccounted(r);
            assertTrue(ms(r, "p99_ms") >= 400, "p99 " + r.get("p99_ms") + " ms: " + r);
            assertTrue(ms(r, "send_lag_max_ms") >= 400, r.toString());
        }
    }

    @JettyAndOkHttp
    void nonTwoHundredsAreCountedNotTimed(String id) throws Exception {
        Map<String, Object> r = load("--client", id, "--rate", "50", "--duration", "0.5", url("/fail"));
        assertEquals(n(r, "offered"), n(r, "non2xx"), r.toString());
        assertEquals(0, n(r, "ok"));
        assertNull(r.get("p50_ms"));
    }

    @JettyAndOkHttp
    void theIntervalLogHoldsEveryOkLatency(String id, @TempDir Path dir) throws Exception {
        Path hlog = dir.resolve("run.hlog");
        Map<String, Object> r = load("--client", id, "--rate", "100", "--duration", "2", "--warmup", "0.5",
                "--hlog", hlog.toString(), url("/"));
        HistogramLogReader reader = new HistogramLogReader(hlog.toString());
        long count = 0;
        int intervals = 0;
        for (EncodableHistogram h; (h = reader.nextIntervalHistogram()) != null; intervals++) {
            count += ((org.HdrHistogram.Histogram) h).getTotalCount();
        }
        reader.close();
        assertEquals(n(r, "ok"), count, "latencies in the log");
        assertTrue(intervals >= 2, intervals + " intervals");
        assertEquals(hlog.toString(), r.get("hlog"));
    }

    @Test
    void theThreadDumpShowsEveryThreadHalfwayThroughTheWindow(@TempDir Path dir) throws Exception {
        // OkHttp runs each call on a thread of its own: with 300 ms answers at 20/s, about six are
        // waiting in a socket read halfway through, and the dump says so with their stacks.
        Path dump = dir.resolve("run.threads.txt");
        Map<String, Object> r = load("--client", "okhttp", "--rate", "20", "--duration", "2", "--connections", "16",
                "--thread-dump", dump.toString(), url("/?ms=300"));
        assertEquals(dump.toString(), r.get("thread_dump"));
        String text = java.nio.file.Files.readString(dump);
        assertTrue(text.startsWith("OpenLoad okhttp "), text);
        assertTrue(text.contains("\"openload-sampler\" #"), "the dumping thread itself is listed");
        long reading = java.util.Arrays.stream(text.split("\n\n"))
                .filter(t -> t.startsWith("\"OkHttp http") && t.contains("NioSocketImpl.read"))
                .count();
        assertTrue(reading >= 3, reading + " OkHttp call threads reading a socket:\n" + text);
        assertTrue(text.matches("(?s).*cpu=\\d+\\.\\dms.*"), "each thread's CPU time");
        // a burst over before its first second has no dump, and says so
        Path none = dir.resolve("quick.threads.txt");
        Map<String, Object> quick = load("--client", "okhttp", "--mode", "burst", "--requests", "10",
                "--thread-dump", none.toString(), url("/"));
        assertEquals(null, quick.get("thread_dump"));
        assertTrue(!java.nio.file.Files.exists(none));
    }

    @JettyAndOkHttp
    void aBurstIsAccountedForWhateverHappens(String id) throws Exception {
        Map<String, Object> fast = load("--client", id, "--mode", "burst", "--requests", "200", "--connections", "4",
                url("/"));
        assertEquals(200, n(fast, "offered"));
        assertEquals(200, n(fast, "ok"), fast.toString());
        // 2 connections, 300 ms each, a 0.5 s timeout: most of the 20 time out waiting.
        Map<String, Object> slow = load("--client", id, "--mode", "burst", "--requests", "20", "--connections", "2",
                "--timeout", "0.5", url("/?ms=300"));
        assertTrue(n(slow, "timeouts") >= 14, slow.toString());
    }

    @Test
    void parkModeCountsSubmissions() throws Exception {
        Map<String, Object> r = load("--client", "okhttp", "--mode", "park", "--park-us", "1000", "--duration",
                "0.5", url("/"));
        assertTrue(n(r, "submits") >= 100 && n(r, "submits") <= 500, r.toString());
        assertTrue(ms(r, "submit_rps") > 0, r.toString());
    }

    @Test
    void aBadCommandLineIsOneMessage() {
        for (String[] bad : new String[][] {
                {}, {"--client", "curl", url("/")}, {"--client", "jetty", url("/")},
                {"--client", "jetty", "--rate", "-1", "--duration", "1", url("/")},
                {"--client", "jetty", "--rate", "10", "--duration", "1", "--bogus", "1", url("/")},
                {"--client", "jetty", "--rate", "10", "--duration", "1", "ftp://x/"},
                {"--client", "jetty", "--mode", "burst", url("/")}, {"--client", "jetty", "--rate"}}) {
            LoadOptions.Usage e = assertThrows(LoadOptions.Usage.class, () -> LoadOptions.parse(bad));
            assertTrue(!e.getMessage().contains("\n"), e.getMessage());
        }
    }

    @Test
    void threadNamesAreGroupedWithoutTheirNumbers() {
        assertEquals("HttpClient-#-Worker-#", ThreadCensus.prefix("HttpClient-3-Worker-0"));
        assertEquals("HttpClient-#", ThreadCensus.prefix("HttpClient@6d3af739-41"));
        assertEquals("OkHttp http", ThreadCensus.prefix("OkHttp http://127.0.0.1:4000/..."));
    }

    @Test
    void theJsonLineIsCompactAndEscaped() {
        Map<String, Object> m = new java.util.LinkedHashMap<>();
        m.put("a", 1.50);
        m.put("b", null);
        m.put("c", "x\"y");
        m.put("d", Map.of("e", 2L));
        assertEquals("{\"a\":1.5,\"b\":null,\"c\":\"x\\\"y\",\"d\":{\"e\":2}}", JsonLine.of(m));
    }

    /**
     * The timeline of a burst on a pool of 2 against a server that holds each request 50 ms: a line
     * about every 100 ms, counts that only grow, the last line with every request answered; the pool's
     * own account shows requests pending a lease while the pool is full, and the IO thread's CPU is there.
     */
    @Test
    void theTimelineFollowsTheBurstAndThePoolsOwnAccount(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("t.jsonl");
        int pssReads = OpenLoad.PSS_READS.get();
        Map<String, Object> r = load("--client", "apache-hc5", "--mode", "burst", "--requests", "40",
                "--connections", "2", "--timeline", file.toString(), url("/?ms=50"));
        assertEquals(40L, n(r, "ok"), r.toString());
        // the client's PSS: at least its heap in use, and not more than the machine could hold; read once,
        // when the run of a second had ended (reading walks the client's page tables on its own core)
        assertEquals(1, OpenLoad.PSS_READS.get() - pssReads, "PSS reads in a run of a second");
        long pss = n(r, "pss_kib"), heap = java.lang.management.ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed() >> 10;
        assertTrue(pss > Math.min(heap, 10_000) && pss < 64L << 20, "pss_kib " + pss + ", heap used " + heap + " KiB");
        List<String> lines = java.nio.file.Files.readAllLines(file);
        assertTrue(lines.size() >= 10, "40 requests, 2 at a time, 50 ms each: a second or more: " + lines);
        long lastOk = -1, lastT = Long.MIN_VALUE, mostPending = 0;
        for (String line : lines) {
            long t = field(line, "\"t_ms\":"), ok = field(line, "\"ok\":");
            assertTrue(t > lastT && ok >= lastOk, "time and answers only grow: " + lines);
            lastT = t;
            lastOk = ok;
            mostPending = Math.max(mostPending, field(line, "\"pending\":"));
            assertTrue(line.contains("\"httpclient-dispatch-#\":") && line.contains("\"jvm\":"), line);
        }
        assertEquals(40L, lastOk, "the last line comes after every answer: " + lines.get(lines.size() - 1));
        assertTrue(mostPending > 0, "38 requests wait for one of 2 connections: " + lines);
        assertTrue(lines.stream().allMatch(l -> !l.contains("\"busy\"") || l.matches(".*\"busy\":\\{\"[^\"]+\":\"[A-Za-z].*")),
                "a busy thread's stack, frames named Class.method: " + lines);
        long opened = field(lines.get(lines.size() - 1), "\"opened\":");
        assertTrue(opened >= 2 && opened < 50, "the pool of 2 opened 2 (and the machine perhaps a few): " + opened);
    }

    private static long field(String line, String key) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile(java.util.regex.Pattern.quote(key) + "(-?\\d+)")
                .matcher(line);
        assertTrue(m.find(), key + " in " + line);
        return Long.parseLong(m.group(1));
    }
}
