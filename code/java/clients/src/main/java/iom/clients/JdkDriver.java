package iom.clients;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

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
        HttpClient.Builder builder = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1);
        if (pool.shipped()) {
            executor = null;
            limiter = null;
        } else {
            executor = Executors.newFixedThreadPool(pool.ioThreads());
            limiter = new Limiter(pool.connections());
            builder.executor(executor).connectTimeout(pool.timeout());
        }
        client = builder.build();
    }

    @Override
    public String id() {
        return "jdk";
    }

    @Override
    public CompletableFuture<Response> get(URI uri) {
        if (limiter == null) {
            return send(uri);
        }
        long ms = pool.timeout().toMillis();
        return limiter.acquire().orTimeout(ms, TimeUnit.MILLISECONDS)
                .thenCompose(free -> send(uri).whenComplete((r, e) -> limiter.release()));
    }

    private CompletableFuture<Response> send(URI uri) {
        HttpRequest.Builder request = HttpRequest.newBuilder(uri).GET();
        if (!pool.shipped()) {
            request.timeout(pool.timeout());
        }
        return client.sendAsync(request.build(), HttpResponse.BodyHandlers.ofByteArray())
                .thenApply(r -> new Response(r.statusCode(), r.body().length));
    }

    @Override
    public void close() {
        client.close();
        if (executor != null) {
            executor.shutdownNow();
        }
    }
}
