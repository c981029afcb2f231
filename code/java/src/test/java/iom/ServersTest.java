package iom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import iom.common.Http;
import java.io.ByteArrayOutputStream;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.net.Socket;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every server in iom.servers, as a child process, on what the Python contract tests do not
 * check (code/tests/test_java_servers.py runs the conformance battery, exact bytes on
 * keep-alive, SIGTERM with open connections, the overlap of the work and the setup errors):
 * <ul>
 * <li>the exact bytes of every response after which a server closes (Connection: close, a
 *     pipeline that ends with one, 400, 431), and the close;</li>
 * <li>pipelined requests without Nagle stalls: wrk's pipelined load, as a test. A client that
 *     writes 16 requests at once must get 16 responses at once. A server that writes them one
 *     by one without TCP_NODELAY has the second wait for the client's delayed ACK of the first
 *     (~40 ms), every batch: 10 batches would take 400 ms instead of a few.</li>
 * </ul>
 * The servers are not listed here: {@link #servers} finds them in the compiled package.
 */
class ServersTest {
    static final String GET = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    static final String GET_CLOSE = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    /** A little work per request takes every model's other path: the worker pools, Netty's business group, Mina's executor. */
    static final List<String> WORK = List.of("--work-ms", "0.05", "--spin-us", "5");
    static final int DEPTH = 16, BATCHES = 10, WARM_UP = 3;
    static final long BUDGET_MS = 250;

    /**
     * The main class of every server in iom.servers (each class there with a static main), with
     * no flags and with WORK. Found in the compiled package, not listed: the server ids are
     * written once, in code/iobench/manifest.py.
     */
    static Stream<Arguments> servers() throws Exception {
        URL dir = ServersTest.class.getClassLoader().getResource("iom/servers");
        assertTrue(dir != null && dir.getProtocol().equals("file"), "iom/servers is not a folder of classes: " + dir);
        List<String> mains;
        try (Stream<Path> files = Files.list(Path.of(dir.toURI()))) {
            mains = files.map(f -> f.getFileName().toString())
                    .filter(f -> f.endsWith(".class") && !f.contains("$"))
                    .map(f -> "iom.servers." + f.substring(0, f.length() - ".class".length()))
                    .filter(ServersTest::hasMain)
                    .sorted()
                    .toList();
        }
        assertFalse(mains.isEmpty(), "no server classes in " + dir);
        return mains.stream().flatMap(m -> Stream.of(Arguments.of(m, List.of()), Arguments.of(m, WORK)));
    }

    private static boolean hasMain(String className) {
        try {
            Method main = Class.forName(className, false, ServersTest.class.getClassLoader())
                    .getMethod("main", String[].class);
            return Modifier.isStatic(main.getModifiers());
        } catch (ClassNotFoundException | NoSuchMethodException e) {
            return false; // a part of a server (NettyHandler), not a server
        }
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("servers")
    void closingResponsesAndPipelinedBatches(String mainClass, List<String> flags) throws Exception {
        try (ServerProcess server = new ServerProcess(ServerProcess.classpath(), mainClass, flags)) {
            closingResponses(server);
            pipelinedBatches(server);
        } // close(): SIGTERM, exit status 0
    }

    /** A request that ends its connection, and the bytes it gets before the close. */
    record Closing(String what, String request, byte[] response) {}

    /** Each request, on a connection of its own: exactly the C servers' bytes, then the close. */
    static void closingResponses(ServerProcess server) throws Exception {
        List<Closing> cases = List.of(
                new Closing("Connection: close", GET_CLOSE, Http.RESPONSE_CLOSE),
                new Closing("9 pipelined requests, then one with Connection: close", GET.repeat(9) + GET_CLOSE,
                        concat(Http.RESPONSE_KEEP_ALIVE, 9, Http.RESPONSE_CLOSE)),
                new Closing("not HTTP", "THIS IS NOT HTTP\r\n\r\n", Http.RESPONSE_400),
                new Closing("a request body", "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
                        Http.RESPONSE_400),
                new Closing("headers over 8 KiB", "GET / HTTP/1.1\r\nX-Big: " + "x".repeat(8200), Http.RESPONSE_431));
        for (Closing c : cases) {
            try (Socket s = server.connect()) {
                ServerProcess.send(s, c.request());
                assertArrayEquals(c.response(), ServerProcess.readToEnd(s), c.what());
            }
        }
    }

    /** A few batches to warm up, then BATCHES batches of DEPTH requests on one connection, timed. */
    static void pipelinedBatches(ServerProcess server) throws Exception {
        try (Socket s = server.connect()) {
            s.setTcpNoDelay(true); // as wrk does: any stall is the server's
            for (int i = 0; i < WARM_UP; i++) {
                batch(s);
            }
            long start = System.nanoTime();
            for (int i = 0; i < BATCHES; i++) {
                batch(s);
            }
            long ms = (System.nanoTime() - start) / 1_000_000;
            assertTrue(ms < BUDGET_MS, BATCHES + " batches of " + DEPTH + " pipelined requests took " + ms
                    + " ms (budget " + BUDGET_MS + " ms): a Nagle/delayed-ACK stall per batch?");
        }
    }

    /** DEPTH requests in one write, then exactly DEPTH keep-alive responses, in order. */
    static void batch(Socket s) throws Exception {
        ServerProcess.send(s, GET.repeat(DEPTH));
        byte[] all = ServerProcess.readExactly(s, DEPTH * Http.RESPONSE_KEEP_ALIVE.length);
        assertEquals(new String(Http.RESPONSE_KEEP_ALIVE, StandardCharsets.US_ASCII).repeat(DEPTH),
                new String(all, StandardCharsets.US_ASCII));
    }

    /** n times a, then b. */
    static byte[] concat(byte[] a, int n, byte[] b) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (int i = 0; i < n; i++) {
            out.writeBytes(a);
        }
        out.writeBytes(b);
        return out.toByteArray();
    }
}
