package iom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import iom.common.Http;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Every corrected Java server, as a child process: the contract, round trip by round trip. */
class ServersTest {
    static final String GET = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    static final String GET_CLOSE = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";

    @ParameterizedTest
    @ValueSource(strings = {"Blocking", "ThreadPerConnection", "ThreadPool", "NioReactor", "NioWorkers",
            "NioMulti", "Nio2", "VirtualThreads", "NettyServer", "MinaServer"})
    void contract(String name) throws Exception {
        try (ServerProcess server = new ServerProcess("iom.servers." + name)) {
            check(server);
        } // close(): SIGTERM, exit status 0
    }

    /** --work-ms takes every model's "blocking work" path (worker pools, Netty's business group, Mina's executor). */
    @ParameterizedTest
    @ValueSource(strings = {"Blocking", "ThreadPerConnection", "ThreadPool", "NioReactor", "NioWorkers",
            "NioMulti", "Nio2", "VirtualThreads", "NettyServer", "MinaServer"})
    void contractWithWork(String name) throws Exception {
        try (ServerProcess server = new ServerProcess("iom.servers." + name, "--work-ms", "1", "--spin-us", "50")) {
            check(server);
        }
    }

    static void check(ServerProcess server) throws Exception {
        roundTrip(server);
        keepAlive(server);
        pipelining(server);
        malformed(server);
        tooLarge(server);
        concurrentClients(server);
    }

    /** One request with Connection: close: exactly the C servers' bytes, then the server closes. */
    static void roundTrip(ServerProcess server) throws Exception {
        try (Socket s = server.connect()) {
            ServerProcess.send(s, GET_CLOSE);
            assertArrayEquals(Http.RESPONSE_CLOSE, ServerProcess.readToEnd(s));
        }
        try (Socket s = server.connect()) {
            ServerProcess.send(s, "GET / HTTP/1.0\r\nHost: x\r\n\r\n");
            assertArrayEquals(Http.RESPONSE_CLOSE, ServerProcess.readToEnd(s));
        }
    }

    /** 100 requests, one after another, on one connection. */
    static void keepAlive(ServerProcess server) throws Exception {
        try (Socket s = server.connect()) {
            for (int i = 0; i < 100; i++) {
                ServerProcess.send(s, GET);
                assertArrayEquals(Http.RESPONSE_KEEP_ALIVE,
                        ServerProcess.readExactly(s, Http.RESPONSE_KEEP_ALIVE.length), "request " + (i + 1));
            }
        }
    }

    /** 10 requests in one write (the last asks to close): 10 responses in order, then the close. */
    static void pipelining(ServerProcess server) throws Exception {
        try (Socket s = server.connect()) {
            ServerProcess.send(s, GET.repeat(9) + GET_CLOSE);
            byte[] all = ServerProcess.readToEnd(s);
            assertEquals(9 * Http.RESPONSE_KEEP_ALIVE.length + Http.RESPONSE_CLOSE.length, all.length);
            String expected = new String(Http.RESPONSE_KEEP_ALIVE, "US-ASCII").repeat(9)
                    + new String(Http.RESPONSE_CLOSE, "US-ASCII");
            assertEquals(expected, new String(all, "US-ASCII"));
        }
    }

    /** Not HTTP: a 400 and a close, and the server lives on. */
    static void malformed(ServerProcess server) throws Exception {
        try (Socket s = server.connect()) {
            ServerProcess.send(s, "THIS IS NOT HTTP\r\n\r\n");
            assertArrayEquals(Http.RESPONSE_400, ServerProcess.readToEnd(s));
        }
        try (Socket s = server.connect()) {
            ServerProcess.send(s, "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello");
            assertArrayEquals(Http.RESPONSE_400, ServerProcess.readToEnd(s));
        }
    }

    /** Headers over 8 KiB: a 431 and a close. */
    static void tooLarge(ServerProcess server) throws Exception {
        try (Socket s = server.connect()) {
            ServerProcess.send(s, "GET / HTTP/1.1\r\nX-Big: " + "x".repeat(8200));
            assertArrayEquals(Http.RESPONSE_431, ServerProcess.readToEnd(s));
        }
    }

    /** 50 clients at once, 10 keep-alive requests each. */
    static void concurrentClients(ServerProcess server) throws Exception {
        ExecutorService clients = Executors.newFixedThreadPool(50);
        try {
            List<Future<Boolean>> results = new ArrayList<>();
            for (int c = 0; c < 50; c++) {
                results.add(clients.submit(() -> {
                    try (Socket s = server.connect()) {
                        for (int i = 0; i < 10; i++) {
                            ServerProcess.send(s, GET);
                            assertArrayEquals(Http.RESPONSE_KEEP_ALIVE,
                                    ServerProcess.readExactly(s, Http.RESPONSE_KEEP_ALIVE.length));
                        }
                    }
                    return true;
                }));
            }
            for (Future<Boolean> r : results) {
                assertTrue(r.get());
            }
        } finally {
            clients.shutdownNow();
        }
    }
}
