package iom.rpc;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import iom.rpc.ProviderProcess.Answer;
import iom.rpc.spring.Consumer;
import iom.rpc.spring.FluxProvider;
import iom.rpc.spring.MvcProvider;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The Spring providers and the consumer as the harness runs them. A Spring app takes seconds to
 * start, so every process of the class starts at once, before the first test, and is shared:
 * each test leaves its processes as it found them.
 */
class SpringProvidersTest {
    private static final byte[] CALL_101 = Codec.JSON.writeRequest(RpcRequest.findById(101));
    private static final List<ProviderProcess> STARTED = Collections.synchronizedList(new ArrayList<>());
    private static ProviderProcess tomcat, tomcatUnlimited, tomcatWork, tomcatWorkPool1, tomcatVt;
    private static ProviderProcess flux, fluxWorkKeep3, fluxWorkPool1, consumer, consumerOfSilence;
    private static ServerSocket silent; // listens, accepts, never answers
    private static final List<Socket> HELD = Collections.synchronizedList(new ArrayList<>());

    private static Future<ProviderProcess> start(ExecutorService ex, Class<?> main, String... args) {
        return ex.submit(() -> {
            ProviderProcess p = new ProviderProcess(main, args);
            STARTED.add(p);
            return p;
        });
    }

    @BeforeAll
    static void startAll() throws Exception {
        silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread.ofVirtual().start(() -> {
            try {
                while (true) {
                    HELD.add(silent.accept());
                }
            } catch (IOException e) {
                // closed by the test: done accepting
            }
        });
        try (ExecutorService ex = Executors.newVirtualThreadPerTaskExecutor()) {
            Future<ProviderProcess> t = start(ex, MvcProvider.class);
            Future<ProviderProcess> t0 = start(ex, MvcProvider.class, "--keep-alive-requests", "0");
            Future<ProviderProcess> tw = start(ex, MvcProvider.class, "--work-ms", "50");
            Future<ProviderProcess> tw1 = start(ex, MvcProvider.class, "--work-ms", "50", "--pool", "1");
            Future<ProviderProcess> tv = start(ex, MvcProvider.class, "--virtual-threads", "--work-ms", "200");
            Future<ProviderProcess> f = start(ex, FluxProvider.class);
            Future<ProviderProcess> fw3 = start(ex, FluxProvider.class, "--work-ms", "50", "--keep-alive-requests", "3");
            Future<ProviderProcess> fw1 = start(ex, FluxProvider.class, "--work-ms", "50", "--pool", "1");
            Future<ProviderProcess> cs = start(ex, Consumer.class, "--provider", "http://127.0.0.1:" + silent.getLocalPort() + "/");
            tomcat = t.get();
            Future<ProviderProcess> c = start(ex, Consumer.class, "--provider", "http://127.0.0.1:" + tomcat.port + "/");
            tomcatUnlimited = t0.get();
            tomcatWork = tw.get();
            tomcatWorkPool1 = tw1.get();
            tomcatVt = tv.get();
            flux = f.get();
            fluxWorkKeep3 = fw3.get();
            fluxWorkPool1 = fw1.get();
            consumerOfSilence = cs.get();
            consumer = c.get();
        }
    }

    @AfterAll
    static void stopAll() throws Exception {
        if (silent != null) {
            silent.close();
        }
        synchronized (HELD) {
            for (Socket s : HELD) {
                s.close();
            }
        }
        try (ExecutorService ex = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<?>> stopped = new ArrayList<>();
            for (ProviderProcess p : STARTED) {
                stopped.add(ex.submit(() -> {
                    p.close(); // SIGTERM, then exit status 0
                    return null;
                }));
            }
            for (Future<?> f : stopped) {
                f.get();
            }
        }
    }

    private static ProviderProcess named(String id) {
        return switch (id) {
            case "rpc-tomcat" -> tomcat;
            case "rpc-tomcat-vt" -> tomcatVt;
            case "rpc-webflux" -> flux;
            default -> throw new IllegalArgumentException(id);
        };
    }

    private static byte[] answerOf(int id) {
        return Codec.JSON.writeResponse(RpcResponse.ok(new User(id, "user-" + id)));
    }

    @ParameterizedTest
    @ValueSource(strings = {"rpc-tomcat", "rpc-tomcat-vt", "rpc-webflux"})
    void answersWithJsonMappersBytes(String id) throws IOException {
        try (Socket s = named(id).connect()) {
            Answer post = ProviderProcess.post(s, CALL_101);
            assertEquals(200, post.status());
            assertEquals("application/json", post.headers().get("content-type"));
            assertArrayEquals(answerOf(101), post.body(), post.text());
            Answer get = ProviderProcess.get(s, "/?id=7");
            assertEquals(200, get.status());
            assertArrayEquals(answerOf(7), get.body(), get.text());
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"rpc-tomcat", "rpc-tomcat-vt", "rpc-webflux"})
    void malformedCallsAre400sAndTheProviderGoesOn(String id) throws IOException {
        for (String bad : List.of("{\"service\":", "{}", "[1,2]")) {
            try (Socket s = named(id).connect()) {
                assertEquals(400, ProviderProcess.post(s, bad.getBytes(StandardCharsets.UTF_8)).status(), bad);
            }
        }
        try (Socket s = named(id).connect()) {
            assertArrayEquals(answerOf(101), ProviderProcess.post(s, CALL_101).body());
        }
    }

    /** GETs on one connection, up to max: the number of the answer that said Connection: close, or 0. */
    private static int closedAfter(ProviderProcess p, int max) throws IOException {
        try (Socket s = p.connect()) {
            for (int i = 1; i <= max; i++) {
                Answer a = ProviderProcess.get(s, "/?id=" + i);
                assertArrayEquals(answerOf(i), a.body());
                if ("close".equalsIgnoreCase(a.headers().get("connection"))) {
                    assertEquals(-1, s.getInputStream().read(), "the connection is closed after Connection: close");
                    return i;
                }
            }
            return 0;
        }
    }

    @Test
    void keepAliveLimits() throws IOException {
        assertEquals(100, closedAfter(tomcat, 150), "Tomcat as shipped: 100 requests a connection");
        assertEquals(0, closedAfter(tomcatUnlimited, 150), "rpc-tomcat --keep-alive-requests 0: unlimited");
        assertEquals(0, closedAfter(flux, 150), "Reactor Netty as shipped: unlimited");
        assertEquals(3, closedAfter(fluxWorkKeep3, 150), "rpc-webflux --keep-alive-requests 3");
    }

    /** n GETs at once, each on a connection of its own; `during` runs while they are in flight. */
    private static long concurrently(ProviderProcess p, int n, Runnable during) throws Exception {
        List<Socket> sockets = new ArrayList<>();
        try (ExecutorService ex = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int i = 0; i < n; i++) {
                sockets.add(p.connect());
            }
            long start = System.nanoTime();
            List<Future<Answer>> answers = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                Socket s = sockets.get(i);
                String path = "/?id=" + (i + 1);
                answers.add(ex.submit(() -> ProviderProcess.get(s, path)));
            }
            during.run();
            for (int i = 0; i < n; i++) {
                assertArrayEquals(answerOf(i + 1), answers.get(i).get().body());
            }
            return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        } finally {
            for (Socket s : sockets) {
                s.close();
            }
        }
    }

    @Test
    void blockingWorkRunsOnThePoolThatPoolSizes() throws Exception {
        for (ProviderProcess p : List.of(tomcatWork, fluxWorkKeep3, tomcatWorkPool1, fluxWorkPool1)) {
            concurrently(p, 8, () -> {}); // warm up: the first requests load classes and start threads
        }
        for (ProviderProcess p : List.of(tomcatWork, fluxWorkKeep3)) {
            long ms = concurrently(p, 8, () -> {});
            assertTrue(ms < 300, "8 calls of 50 ms at once took " + ms + " ms: not in parallel");
        }
        for (ProviderProcess p : List.of(tomcatWorkPool1, fluxWorkPool1)) {
            long ms = concurrently(p, 8, () -> {});
            assertTrue(ms >= 400, "--pool 1: 8 calls of 50 ms took " + ms + " ms: not one at a time");
        }
    }

    private static long threads(ProviderProcess p) {
        try (Stream<Path> tasks = Files.list(Path.of("/proc", Long.toString(p.process.pid()), "task"))) {
            return tasks.count();
        } catch (IOException e) {
            throw new AssertionError("no /proc/PID/task for " + p.process.pid(), e);
        }
    }

    /**
     * The observable of a virtual thread per request: 50 calls of 200 ms in flight at once, and
     * the provider's count of OS threads (/proc/PID/task) barely moves, where rpc-tomcat's
     * grows by a platform thread per call in flight (up to its 200).
     */
    @Test
    void virtualThreadsHoldNoOsThreadPerCall() throws Exception {
        assumeTrue(Files.isDirectory(Path.of("/proc/self/task")), "needs Linux's /proc");
        concurrently(tomcatVt, 8, () -> {});
        long before = threads(tomcatVt);
        long[] during = new long[1];
        long ms = concurrently(tomcatVt, 50, () -> {
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
            during[0] = threads(tomcatVt);
        });
        assertTrue(ms < 1500, "50 calls of 200 ms on virtual threads took " + ms + " ms");
        assertTrue(during[0] - before < 10, "OS threads " + before + " -> " + during[0] + " with 50 calls in flight");

        concurrently(tomcatWork, 8, () -> {});
        long platformBefore = threads(tomcatWork);
        concurrently(tomcatWork, 50, () -> {});
        long platformAfter = threads(tomcatWork);
        assertTrue(platformAfter - platformBefore >= 25,
                "rpc-tomcat: OS threads " + platformBefore + " -> " + platformAfter + " after 50 calls at once");
    }

    @Test
    void consumerCallsTheProvider() throws IOException {
        try (Socket s = consumer.connect()) {
            Answer a = ProviderProcess.get(s, "/?id=5");
            assertEquals(200, a.status(), a.text());
            assertEquals("{\"id\":5,\"name\":\"user-5\"}", a.text());
        }
    }

    /** Silent provider: 3 attempts of 200 ms each, then 502; closed port: 502 at once. */
    @Test
    void consumerRetriesThenAnswers502() throws Exception {
        int accepted = HELD.size();
        long start = System.nanoTime();
        try (Socket s = consumerOfSilence.connect()) {
            assertEquals(502, ProviderProcess.get(s, "/?id=5").status());
        }
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertTrue(ms >= 600 && ms < 600 + 1000, "3 attempts of 200 ms took " + ms + " ms");
        for (long end = System.nanoTime() + 2_000_000_000L; HELD.size() - accepted < 3 && System.nanoTime() < end; ) {
            Thread.sleep(10); // the accept loop may not have taken the last connection yet
        }
        assertEquals(3, HELD.size() - accepted, "attempts: 1 + --retries 2");

        silent.close(); // nothing listens there now: refused at once
        start = System.nanoTime();
        try (Socket s = consumerOfSilence.connect()) {
            assertEquals(502, ProviderProcess.get(s, "/?id=6").status());
        }
        ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertTrue(ms < 600 + 500, "a closed port took " + ms + " ms");
    }

    @Test
    void aPortInUseExitsOneWithAnError() throws Exception {
        String classpath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        String java = ProcessHandle.current().info().command().orElse(System.getProperty("java.home") + "/bin/java");
        Process p = new ProcessBuilder(java, "-Xmx256m", "-cp", classpath, MvcProvider.class.getName(),
                "--port", Integer.toString(tomcat.port)).start();
        p.getOutputStream().close();
        byte[] out;
        byte[] err;
        try (InputStream o = p.getInputStream(); InputStream e = p.getErrorStream();
                ExecutorService ex = Executors.newVirtualThreadPerTaskExecutor()) {
            Future<byte[]> errBytes = ex.submit(e::readAllBytes);
            out = o.readAllBytes();
            err = errBytes.get(60, TimeUnit.SECONDS);
        }
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        String stderr = new String(err, StandardCharsets.UTF_8);
        assertEquals(1, p.exitValue(), stderr);
        assertEquals("", new String(out, StandardCharsets.UTF_8), "nothing on stdout");
        assertTrue(stderr.contains("error: start rpc-tomcat on 127.0.0.1:" + tomcat.port), stderr);
    }
}
