package iom.clients;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every driver against a server that counts: a GET reads the whole body; HTTP/1.1 with no upgrade;
 * the pool bounds the requests in flight (and so the connections) to N; a request the server holds
 * past the timeout is counted a timeout, and the pool is usable afterwards.
 */
class DriversTest {
    static final int BODY = 3000; // more than one read of some clients' first buffer
    static final Set<String> protocols = ConcurrentHashMap.newKeySet();
    static final Set<String> upgrades = ConcurrentHashMap.newKeySet();

    @RegisterExtension
    static final CountingServer server = new CountingServer(DriversTest::answer);

    /** GET /?ms=M answers BODY bytes after M ms. */
    static CountingServer.Answer answer(HttpExchange x) throws InterruptedException {
        protocols.add(x.getProtocol());
        String upgrade = x.getRequestHeaders().getFirst("Upgrade");
        if (upgrade != null) {
            upgrades.add(upgrade);
        }
        String query = x.getRequestURI().getQuery();
        if (query != null && query.startsWith("ms=")) {
            Thread.sleep(Long.parseLong(query.substring(3)));
        }
        return new CountingServer.Answer(200, "x".repeat(BODY).getBytes());
    }

    static URI uri(String query) {
        return URI.create(server.url("/" + query));
    }

    /**
     * A client's first request loads its classes and opens its connection: on a busy machine that
     * alone can take longer than a short test timeout (CI once saw AHC's first request time out at
     * 300 ms). Tests about timeouts start from a warm client; a warm client answers at once.
     */
    static void warm(Driver d) throws Exception {
        Throwable last = null;
        for (int i = 0; i < 20; i++) {
            last = d.get(uri("")).handle((r, e) -> e).get(10, TimeUnit.SECONDS);
            if (last == null) {
                return;
            }
        }
        throw new AssertionError("20 requests to an idle server failed; the last: " + last);
    }

    static List<String> ids() {
        return Drivers.IDS;
    }

    @ParameterizedTest
    @MethodSource("ids")
    void aGetReadsTheWholeBodyOverHttp11(String id) throws Exception {
        try (Driver d = Drivers.open(id, Pool.of(4, 1, Duration.ofSeconds(5)))) {
            Driver.Response r = d.get(uri("")).get(10, TimeUnit.SECONDS);
            assertEquals(new Driver.Response(200, BODY), r);
            assertEquals(Outcome.OK, Outcome.of(r));
            assertEquals(id, d.id());
        }
        assertEquals(Set.of("HTTP/1.1"), protocols);
        assertTrue(upgrades.isEmpty(), "an upgrade was offered: " + upgrades);
    }

    @ParameterizedTest
    @MethodSource("ids")
    void thePoolBoundsTheRequestsInFlight(String id) throws Exception {
        int n = 4;
        try (Driver d = Drivers.open(id, Pool.of(n, 1, Duration.ofSeconds(10)))) {
            server.peak.set(0);
            List<CompletableFuture<Driver.Response>> all = new ArrayList<>();
            for (int i = 0; i < 5 * n; i++) {
                all.add(d.get(uri("?ms=100")));
            }
            for (CompletableFuture<Driver.Response> f : all) {
                assertEquals(200, f.get(20, TimeUnit.SECONDS).status());
            }
            assertEquals(n, server.peak.get(), "requests the server saw at once");
        }
    }

    @ParameterizedTest
    @MethodSource("ids")
    void aRequestPastItsTimeoutIsCountedATimeoutAndThePoolRecovers(String id) throws Exception {
        try (Driver d = Drivers.open(id, Pool.of(1, 1, Duration.ofMillis(300)))) {
            // The held request on a connection that came back to the pool, as under load: as
            // shipped, Apache freed such a connection only at its reactor's next 1 s tick, so the
            // next request timed out too unless the tick fell in its 300 ms (three tries: 3% luck).
            warm(d);
            for (int i = 0; i < 3; i++) {
                Throwable failed = d.get(uri("?ms=1000")).handle((r, e) -> e).get(10, TimeUnit.SECONDS);
                assertEquals(Outcome.TIMEOUT, Outcome.of(failed), String.valueOf(failed));
                // At once, while the server still holds it: the abort must free the connection.
                Throwable next = d.get(uri("")).handle((r, e) -> e).get(10, TimeUnit.SECONDS);
                assertNull(next, "the request after a timeout failed");
            }
        }
    }

    @ParameterizedTest
    @MethodSource("ids")
    void theTimeoutCountsTheWaitForAConnection(String id) throws Exception {
        // One connection: the second request waits 400 ms for it, then 400 ms for the server.
        try (Driver d = Drivers.open(id, Pool.of(1, 1, Duration.ofMillis(600)))) {
            warm(d);
            CompletableFuture<Driver.Response> first = d.get(uri("?ms=400"));
            Throwable second = d.get(uri("?ms=400")).handle((r, e) -> e).get(10, TimeUnit.SECONDS);
            assertEquals(200, first.get(10, TimeUnit.SECONDS).status());
            assertEquals(Outcome.TIMEOUT, Outcome.of(second), second == null ? "it got its response" : second.toString());
        }
    }

    @Test
    void theLimiterSkipsAWaiterThatGaveUp() throws Exception {
        Limiter limiter = new Limiter(Pool.of(1, 1, Duration.ofSeconds(1)));
        assertTrue(limiter.acquire().isDone());
        CompletableFuture<Void> gaveUp = limiter.acquire();
        CompletableFuture<Void> next = limiter.acquire();
        assertFalse(gaveUp.isDone());
        gaveUp.completeExceptionally(new java.util.concurrent.TimeoutException());
        limiter.release();
        assertTrue(next.isDone() && !next.isCompletedExceptionally());
        limiter.release();
        assertEquals(1, limiter.free());
    }

    @Test
    void aPoolNeedsConnectionsThreadsAndATimeout() {
        org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> Pool.of(0, 1, Duration.ofSeconds(1)));
        org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> Drivers.open("curl", Pool.SHIPPED));
    }
}
