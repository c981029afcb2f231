package iom.clients;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * The knobs every driver sets alike: at most {@code connections} connections to the server (and so
 * at most that many requests in flight on HTTP/1.1), {@code ioThreads} threads waiting on sockets
 * where the client has such threads, and one {@code timeout} for a whole request, queueing for a
 * connection included. {@link #SHIPPED} leaves every client as its library ships it instead.
 */
public record Pool(int connections, int ioThreads, Duration timeout) {
    /** Each client's own defaults, untouched (the drivers still pin HTTP/1.1). */
    public static final Pool SHIPPED = new Pool(0, 0, Duration.ZERO);

    public Pool {
        if (connections < 0 || ioThreads < 0 || timeout.isNegative()) {
            throw new IllegalArgumentException("connections, ioThreads and timeout must be >= 0: " + connections
                    + ", " + ioThreads + ", " + timeout);
        }
    }

    public static Pool of(int connections, int ioThreads, Duration timeout) {
        if (connections < 1 || ioThreads < 1 || timeout.isZero()) {
            throw new IllegalArgumentException("a pool needs connections >= 1, ioThreads >= 1 and a timeout > 0");
        }
        return new Pool(connections, ioThreads, timeout);
    }

    public boolean shipped() {
        return connections == 0;
    }

    /**
     * The whole-request timeout, the same for every client: {@code request} fails with a
     * {@link java.util.concurrent.TimeoutException} once {@code timeout} has passed since it was
     * submitted, whatever it was waiting for (a connection, the server, the body). Each library's
     * own timeouts start later or measure something else (OkHttp's call timeout starts when its
     * dispatcher runs the call; Apache's response timeout is a silence between packets), so the
     * drivers set them to the same value only as a backstop. A driver aborts its request when the
     * returned future fails, so the connection goes back to the pool or is closed. As shipped,
     * nothing is added: the library's own defaults decide.
     */
    <T> CompletableFuture<T> bound(CompletableFuture<T> request) {
        return shipped() ? request : request.orTimeout(timeout.toMillis(), TimeUnit.MILLISECONDS);
    }

    /**
     * {@link #bound(CompletableFuture)}, for a driver whose library aborts a request its own way:
     * {@code abort} runs with the failure once {@code request} fails (by the timeout, or otherwise),
     * so that the connection goes back to the pool or is closed. It must be a no-op once the
     * library's request has ended.
     */
    <T> CompletableFuture<T> bound(CompletableFuture<T> request, Consumer<Throwable> abort) {
        request.whenComplete((r, e) -> {
            if (e != null) {
                abort.accept(e);
            }
        });
        return bound(request);
    }
}
