package iom.clients;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * The JDK's HttpClient: one selector thread waits on every socket, and an executor runs what
 * follows a response. It has no limit on connections (a request in flight opens one when no idle
 * one is free), so with a pool this driver bounds the requests in flight itself, with a
 * {@link Limiter} of {@code connections} permits: the client then never needs more connections.
 * Pinned to HTTP/1.1: left to itself it offers an h2c upgrade on every new cleartext connection.
 */
final class JdkDriver implements Driver {
    private final HttpClient client;
    private final ExecutorService executor;
    private final Limiter limiter;
    private final Pool pool;

    JdkDriver(Pool pool) {
        this.pool = pool;
        HttpClient.Builder builder = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1); // shipped HTTP_2 (an h2c upgrade on http://)
        limiter = new Limiter(pool); // connections in flight at most, each within the timeout; as shipped, neither
        if (pool.shipped()) {
            executor = null;
        } else {
            executor = Executors.newFixedThreadPool(pool.ioThreads()); // shipped: a cached pool, unbounded
            builder.executor(executor)
                    .connectTimeout(pool.timeout()); // shipped: none
        }
        client = builder.build();
    }

    @Override
    public CompletableFuture<Response> get(URI uri) {
        return limiter.submit(() -> send(uri)).thenApply(r -> new Response(r.statusCode(), r.body().length));
    }

    /** sendAsync's own future: {@code cancel(true)} aborts the exchange (JDK 16+). */
    private CompletableFuture<HttpResponse<byte[]>> send(URI uri) {
        HttpRequest.Builder request = HttpRequest.newBuilder(uri).GET();
        if (!pool.shipped()) {
            request.timeout(pool.timeout()); // shipped: none; counts from the send, a backstop here
        }
        return client.sendAsync(request.build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    @Override
    public void close() {
        client.shutdownNow();
        if (executor != null) {
            executor.shutdownNow();
        }
    }
}
