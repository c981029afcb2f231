package iom.clients;

import java.io.IOException;
import java.net.URI;
import java.util.concurrent.CompletableFuture;
import org.asynchttpclient.AsyncHttpClient;
import org.asynchttpclient.DefaultAsyncHttpClientConfig;
import org.asynchttpclient.Dsl;
import org.asynchttpclient.ListenableFuture;

/**
 * async-http-client: Netty event loops ({@code ioThreads} of them) wait on every socket; a
 * request's future completes on one of them. As shipped it has no limit on connections, so every
 * request in flight opens one.
 *
 * <p>Its own limit ({@code maxConnections}, {@code maxConnectionsPerHost}) is no pool to queue
 * requests in: its permits belong to open connections and come back only when one closes, and a
 * request that finds none free waits ({@code acquireFreeChannelTimeout}) in the thread that
 * submits it, never for a connection to come back to the pool. Tried here with 4 connections, a
 * 2 s wait and 10 requests of 100 ms submitted back to back: the fifth {@code execute()} blocked
 * for 2 s and failed with {@code TooManyConnectionsException}, although the four connections had
 * long been idle in the pool; the next four reused them, and the tenth failed like the fifth.
 * So with a pool this driver bounds the requests in flight
 * itself, with a {@link Limiter} of {@code connections} permits, as for the JDK's client, and
 * leaves AHC's own limit off.
 */
final class AhcDriver implements Driver {
    private final AsyncHttpClient client;
    private final Limiter limiter;

    AhcDriver(Pool pool) {
        limiter = new Limiter(pool); // connections in flight at most, each within the timeout; as shipped, neither
        DefaultAsyncHttpClientConfig.Builder config = Dsl.config()
                .setHttp2Enabled(false); // shipped true: HTTP/2 when TLS's ALPN offers it (never on http://)
        if (!pool.shipped()) {
            config.setIoThreadsCount(pool.ioThreads()) // shipped -1: one event loop per core
                    .setConnectTimeout(pool.timeout())  // shipped 5 s
                    .setRequestTimeout(pool.timeout())  // shipped 60 s, from the send
                    .setReadTimeout(pool.timeout())     // shipped 60 s of silence
                    .setMaxRequestRetry(0);             // shipped 5; a request is sent once, as by every driver
        }
        client = Dsl.asyncHttpClient(config);
    }

    @Override
    public CompletableFuture<Response> get(URI uri) {
        return limiter.submit(() -> send(uri))
                .thenApply(r -> new Response(r.getStatusCode(), r.getResponseBodyAsBytes().length));
    }

    /** The request's future, which aborts it (closing its connection) when it fails or is cancelled first. */
    private CompletableFuture<org.asynchttpclient.Response> send(URI uri) {
        ListenableFuture<org.asynchttpclient.Response> sent = client.prepareGet(uri.toString()).execute();
        CompletableFuture<org.asynchttpclient.Response> done = new CompletableFuture<>();
        sent.toCompletableFuture().whenComplete((r, e) -> {
            if (e == null) {
                done.complete(r);
            } else {
                done.completeExceptionally(e);
            }
        });
        done.whenComplete((r, e) -> {
            if (e != null && !sent.isDone()) {
                sent.abort(e);
            }
        });
        return done;
    }

    @Override
    public void close() throws IOException {
        client.close();
    }
}
