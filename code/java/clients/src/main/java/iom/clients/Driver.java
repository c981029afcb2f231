package iom.clients;

import java.io.IOException;
import java.net.URI;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * One HTTP client, driven the same way whatever it is: a GET whose whole body is read before the
 * future completes (an unread body keeps a connection from its pool), HTTP/1.1, the pool and
 * timeout of {@link Pool}. Open one with {@link Drivers#open}; close it to stop its threads.
 * A driver of the five is its client's constructor, get and close: {@link Drivers} names it and
 * finds its version. Any other driver (a test's) names its own.
 */
public interface Driver extends AutoCloseable {
    /** What a request ended with: the status and the body's length (the body itself is read and dropped). */
    record Response(int status, int bodyBytes) {}

    /** The client's id: ahc, apache-hc5, jdk, jetty or okhttp (the five drivers' from {@link Drivers}). */
    default String id() {
        return Drivers.id(this);
    }

    /** The library's version, as found at run time in its jar (the JDK's for jdk). */
    default String version() {
        return Drivers.version(this);
    }

    /**
     * Sends GET uri; completes with the response once its body is read, or exceptionally with the
     * client's own exception (see {@link Outcome#of} for how the book counts it), or with a
     * {@link java.util.concurrent.TimeoutException} once the pool's timeout has passed since this
     * call (see {@link Pool#bound}); the request is then aborted.
     */
    CompletableFuture<Response> get(URI uri);

    /**
     * The pool's own account now, as its library keeps it (for Apache HttpClient: connections
     * leased, requests pending a lease, connections available), for {@link Timeline}; empty where
     * the library keeps none that can be read cheaply.
     */
    default Map<String, Long> pool() {
        return Map.of();
    }

    @Override
    void close() throws IOException;
}
