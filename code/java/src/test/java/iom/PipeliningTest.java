package iom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import iom.common.Http;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Pipelined requests without Nagle stalls: wrk's pipelined load, as a test. A client that
 * writes 16 requests at once must get 16 responses at once. A server that writes them one by
 * one without TCP_NODELAY has the second wait for the client's delayed ACK of the first
 * (~40 ms), every batch: 10 batches would take 400 ms instead of a few.
 */
class PipeliningTest {
    static final int DEPTH = 16, BATCHES = 10, WARM_UP = 3;
    static final long BUDGET_MS = 250;

    @ParameterizedTest
    @ValueSource(strings = {"Blocking", "ThreadPerConnection", "ThreadPool", "NioReactor", "NioWorkers",
            "NioMulti", "Nio2", "VirtualThreads", "NettyServer", "MinaServer"})
    void batchesWithoutStalls(String name) throws Exception {
        try (ServerProcess server = new ServerProcess("iom.servers." + name)) {
            batches(server);
        }
    }

    /** A little work per request takes the worker pools, Netty's business group and Mina's executor. */
    @ParameterizedTest
    @ValueSource(strings = {"Blocking", "ThreadPerConnection", "ThreadPool", "NioReactor", "NioWorkers",
            "NioMulti", "Nio2", "VirtualThreads", "NettyServer", "MinaServer"})
    void batchesWithWorkWithoutStalls(String name) throws Exception {
        try (ServerProcess server = new ServerProcess("iom.servers." + name, "--work-ms", "0.05")) {
            batches(server);
        }
    }

    /** A few batches to warm up, then BATCHES batches of DEPTH requests on one connection, timed. */
    static void batches(ServerProcess server) throws Exception {
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
        ServerProcess.send(s, ServersTest.GET.repeat(DEPTH));
        byte[] all = ServerProcess.readExactly(s, DEPTH * Http.RESPONSE_KEEP_ALIVE.length);
        assertEquals(new String(Http.RESPONSE_KEEP_ALIVE, StandardCharsets.US_ASCII).repeat(DEPTH),
                new String(all, StandardCharsets.US_ASCII));
    }
}
