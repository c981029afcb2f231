package iom.rpc;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import iom.rpc.ProviderProcess.Answer;
import iom.rpc.netty.NettyProvider;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** rpc-netty as the harness runs it: both transports, both codecs, its routes, closes and pool. */
class NettyProviderTest {
    private static final byte[] CALL_101 = "{\"service\":\"iom.rpc.UserService\",\"method\":\"findById\",\"args\":[101]}"
            .getBytes(StandardCharsets.UTF_8);
    private static final byte[] MALFORMED = "{\"service\":".getBytes(StandardCharsets.UTF_8);

    private static ProviderProcess start(String... args) throws IOException {
        return new ProviderProcess(NettyProvider.class, args);
    }

    /** One provider per transport and codec, shared by the tests that leave it as they found it. */
    private static final Map<String, ProviderProcess> SHARED = new LinkedHashMap<>();

    private static ProviderProcess shared(String transport, Codec codec) throws IOException {
        String key = transport + " " + name(codec);
        ProviderProcess p = SHARED.get(key);
        if (p == null) {
            p = start("--transport", transport, "--codec", name(codec));
            SHARED.put(key, p);
        }
        return p;
    }

    @AfterAll
    static void stopShared() throws Exception {
        for (ProviderProcess p : SHARED.values()) {
            p.close(); // SIGTERM, exit status 0
        }
    }

    /** ProviderProcess's connection with TCP_NODELAY: its head-then-body writes would wait out delayed ACKs. */
    private static Socket connect(ProviderProcess p) throws IOException {
        Socket s = p.connect();
        s.setTcpNoDelay(true);
        return s;
    }

    private static byte[] call(Codec codec, int id) {
        return codec.writeRequest(RpcRequest.findById(id));
    }

    private static byte[] user(Codec codec, int id) {
        return codec.writeResponse(RpcResponse.ok(new User(id, "user-" + id)));
    }

    private static String name(Codec codec) {
        return codec.name().toLowerCase(java.util.Locale.ROOT);
    }

    /** A raw request (ASCII) on an open connection, and its answer. */
    private static Answer raw(Socket s, String request) throws IOException {
        s.getOutputStream().write(request.getBytes(StandardCharsets.US_ASCII));
        return ProviderProcess.read(s.getInputStream());
    }

    private static void assertClosed(Socket s) throws IOException {
        assertEquals(-1, s.getInputStream().read(), "the provider closed the connection"); // a timeout fails
    }

    @ParameterizedTest
    @EnumSource(Codec.class)
    void httpAnswersTheCallAndKeepsTheConnection(Codec codec) throws Exception {
        try (Socket s = connect(shared("http", codec))) {
            Answer a = ProviderProcess.post(s, call(codec, 101));
            assertEquals(200, a.status());
            assertArrayEquals(user(codec, 101), a.body());
            assertEquals(codec == Codec.JSON ? "application/json" : "application/octet-stream", a.headers().get("content-type"));
            for (int i = 0; i < 100; i++) {
                a = ProviderProcess.post(s, call(codec, i));
                assertArrayEquals(user(codec, i), a.body(), "call " + i + " on the same connection");
                assertNull(a.headers().get("connection"), "no Connection: close without --keep-alive-requests");
            }
        }
    }

    @ParameterizedTest
    @EnumSource(Codec.class)
    void frameAnswersTheCallOnOneConnection(Codec codec) throws Exception {
        try (Socket s = connect(shared("frame", codec))) {
            assertArrayEquals(user(codec, 101), ProviderProcess.frame(s, call(codec, 101)));
            for (int i = 0; i < 100; i++) {
                assertArrayEquals(user(codec, i), ProviderProcess.frame(s, call(codec, i)), "frame " + i);
            }
        }
    }

    @Test
    void keepAliveRequestsClosesAfterTheNthAnswer() throws Exception {
        ProviderProcess p = start("--keep-alive-requests", "3");
        try (Socket s = connect(p)) {
            for (int i = 1; i <= 2; i++) {
                assertNull(ProviderProcess.post(s, CALL_101).headers().get("connection"), "answer " + i);
            }
            Answer third = ProviderProcess.post(s, CALL_101);
            assertArrayEquals(user(Codec.JSON, 101), third.body());
            assertEquals("close", third.headers().get("connection"));
            assertClosed(s);
        } finally {
            p.close();
        }
    }

    @ParameterizedTest
    @EnumSource(Codec.class)
    void aMalformedBodyIs400AndCloses(Codec codec) throws Exception {
        ProviderProcess p = shared("http", codec);
        try (Socket s = connect(p)) {
            Answer a = ProviderProcess.post(s, MALFORMED);
            assertEquals(400, a.status());
            assertEquals("close", a.headers().get("connection"));
            assertClosed(s);
        }
        try (Socket s = connect(p)) {
            assertArrayEquals(user(codec, 101), ProviderProcess.post(s, call(codec, 101)).body(), "a new connection");
        }
    }

    @ParameterizedTest
    @EnumSource(Codec.class)
    void aGarbageFrameClosesThatConnectionOnly(Codec codec) throws Exception {
        ProviderProcess p = shared("frame", codec);
        try (Socket good = connect(p); Socket bad = connect(p)) {
            assertArrayEquals(user(codec, 1), ProviderProcess.frame(good, call(codec, 1)));
            DataOutputStream o = new DataOutputStream(bad.getOutputStream());
            o.writeInt(MALFORMED.length);
            o.write(MALFORMED);
            o.flush();
            assertClosed(bad);
            assertArrayEquals(user(codec, 2), ProviderProcess.frame(good, call(codec, 2)), "the other connection");
        }
    }

    @Test
    void getAnswersJsonWhateverTheCodec() throws Exception {
        ProviderProcess p = shared("http", Codec.BINARY);
        try (Socket s = connect(p)) {
            Answer a = ProviderProcess.get(s, "/?id=7");
            assertEquals(200, a.status());
            assertEquals("application/json", a.headers().get("content-type"));
            assertArrayEquals(user(Codec.JSON, 7), a.body());
            assertEquals(400, ProviderProcess.get(s, "/?id=x").status());
            assertClosed(s);
        }
        try (Socket s = connect(p)) {
            assertEquals(400, ProviderProcess.get(s, "/?id=-1").status());
        }
        try (Socket s = connect(p)) { // HTTP/1.0 without keep-alive: the answer, then the close
            assertArrayEquals(user(Codec.JSON, 1), raw(s, "GET /?id=1 HTTP/1.0\r\n\r\n").body());
            assertClosed(s);
        }
        try (Socket s = connect(p)) { // HTTP/1.0 with keep-alive: said, and kept
            assertEquals("keep-alive", raw(s, "GET /?id=2 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").headers().get("connection"));
            assertEquals(200, ProviderProcess.get(s, "/?id=3").status());
        }
    }

    @Test
    void otherPathsMethodsAndBadRequests() throws Exception {
        ProviderProcess p = shared("http", Codec.JSON);
        try (Socket s = connect(p)) {
            assertEquals(404, ProviderProcess.get(s, "/users?id=1").status());
            Answer put = raw(s, "PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
            assertEquals(405, put.status());
            assertEquals("GET, POST", put.headers().get("allow"));
            assertEquals(200, ProviderProcess.get(s, "/?id=1").status(), "404 and 405 keep the connection");
        }
        try (Socket s = connect(p)) { // a request line over HttpServerCodec's 4096 bytes: the decoder fails it
            assertEquals(400, raw(s, "GET /?id=1&pad=" + "a".repeat(5000) + " HTTP/1.1\r\n\r\n").status());
            assertClosed(s);
        }
        try (Socket s = connect(p)) { // over the aggregator's 64 KiB: Netty's own 413
            assertEquals(413, raw(s, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 70000\r\n\r\n").status());
        }
    }

    /** Milliseconds for 8 connections to get one answer each, at once (after one warm-up answer each). */
    private static long eightAtOnce(ProviderProcess p) throws Exception {
        ExecutorService threads = Executors.newFixedThreadPool(8);
        AtomicLong t0 = new AtomicLong();
        CyclicBarrier go = new CyclicBarrier(8, () -> t0.set(System.nanoTime())); // before any call is sent
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                done.add(threads.submit(() -> {
                    try (Socket s = connect(p)) {
                        assertEquals(200, ProviderProcess.get(s, "/?id=1").status());
                        go.await(10, TimeUnit.SECONDS);
                        assertEquals(200, ProviderProcess.get(s, "/?id=2").status());
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get(20, TimeUnit.SECONDS);
            }
            return (System.nanoTime() - t0.get()) / 1_000_000;
        } finally {
            threads.shutdownNow();
        }
    }

    @Test
    void blockingWorkRunsOnThePoolInParallel() throws Exception {
        ProviderProcess p = start("--work-ms", "50");
        try {
            long ms = eightAtOnce(p);
            assertTrue(ms < 250, "8 calls of 50 ms on 200 threads took " + ms + " ms, not about 50");
        } finally {
            p.close();
        }
    }

    @Test
    void aPoolOfOneRunsThemOneAfterAnother() throws Exception {
        ProviderProcess p = start("--work-ms", "50", "--pool", "1");
        try {
            long ms = eightAtOnce(p);
            assertTrue(ms >= 8 * 50, "8 calls of 50 ms on 1 thread took " + ms + " ms, less than 400");
        } finally {
            p.close();
        }
    }

    @Test
    void aBadFlagExits1() throws Exception {
        String java = ProcessHandle.current().info().command().orElseThrow();
        String classpath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        Process p = new ProcessBuilder(java, "-cp", classpath, NettyProvider.class.getName(), "--codec", "xml")
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(20, TimeUnit.SECONDS), "exited");
        assertEquals(1, p.exitValue());
        assertTrue(err.contains("--codec"), err);
    }
}
