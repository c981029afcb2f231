package iom.clients;

import java.net.URI;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import org.apache.hc.client5.http.async.methods.SimpleHttpResponse;
import org.apache.hc.client5.http.async.methods.SimpleRequestBuilder;
import org.apache.hc.client5.http.config.ConnectionConfig;
import org.apache.hc.client5.http.config.RequestConfig;
import org.apache.hc.client5.http.config.TlsConfig;
import org.apache.hc.client5.http.impl.async.CloseableHttpAsyncClient;
import org.apache.hc.client5.http.impl.async.HttpAsyncClientBuilder;
import org.apache.hc.client5.http.impl.async.HttpAsyncClients;
import org.apache.hc.client5.http.impl.nio.PoolingAsyncClientConnectionManager;
import org.apache.hc.client5.http.impl.nio.PoolingAsyncClientConnectionManagerBuilder;
import org.apache.hc.core5.pool.PoolConcurrencyPolicy;
import org.apache.hc.core5.pool.PoolStats;
import org.apache.hc.core5.concurrent.FutureCallback;
import org.apache.hc.core5.http2.HttpVersionPolicy;
import org.apache.hc.core5.io.CloseMode;
import org.apache.hc.core5.reactor.IOReactorConfig;
import org.apache.hc.core5.util.TimeValue;
import org.apache.hc.core5.util.Timeout;

/**
 * Apache HttpClient 5, async: an IO reactor ({@code ioThreads} dispatcher threads) waits on every
 * socket. As shipped, 5 connections per route and 25 in all; a request waits in the pool's queue
 * for a lease (up to 3 minutes as shipped), then for its response.
 */
final class ApacheDriver implements Driver {
    /**
     * How often each IO reactor thread wakes from select() on its own. It checks timeouts then, and
     * only then processes a cancelled request: as shipped (1 s), a request cancelled at its 300 ms
     * deadline kept its connection until the next tick, so the request after it on a pool of one
     * timed out too, and the reactor's own 300 ms timeouts fired after about 1,070 ms. The system
     * property {@code iom.apache.selectIntervalMs} sets another (the burst's test of the shipped 1 s).
     */
    static final TimeValue SELECT_INTERVAL = TimeValue.ofMilliseconds(Long.getLong("iom.apache.selectIntervalMs", 10));

    /**
     * The pool's concurrency policy: STRICT as shipped (one lock over the whole pool, which
     * enforces the total and the per-route limits exactly), or LAX (a lock per route, the limits
     * kept loosely). The system property {@code iom.apache.poolPolicy} chooses; with
     * {@code iom.apache.selectIntervalMs}, for the chapter's test of Apache's burst, where each
     * setting is one of the candidate causes.
     */
    static final PoolConcurrencyPolicy POOL_POLICY =
            PoolConcurrencyPolicy.valueOf(System.getProperty("iom.apache.poolPolicy", "STRICT"));

    private final CloseableHttpAsyncClient client;
    private final PoolingAsyncClientConnectionManager manager;
    private final Pool pool;

    ApacheDriver(Pool pool) {
        this.pool = pool;
        PoolingAsyncClientConnectionManagerBuilder connections = PoolingAsyncClientConnectionManagerBuilder.create()
                .setPoolConcurrencyPolicy(POOL_POLICY)
                .setDefaultTlsConfig(TlsConfig.custom() // shipped NEGOTIATE, which is HTTP/1.1 on http:// anyway
                        .setVersionPolicy(HttpVersionPolicy.FORCE_HTTP_1).build());
        HttpAsyncClientBuilder builder = HttpAsyncClients.custom();
        if (!pool.shipped()) {
            Timeout timeout = Timeout.of(pool.timeout());
            connections.setMaxConnPerRoute(pool.connections()) // shipped 5
                    .setMaxConnTotal(pool.connections())       // shipped 25
                    .setDefaultConnectionConfig(ConnectionConfig.custom()
                            .setConnectTimeout(timeout).build()); // shipped 3 min
            builder.setIOReactorConfig(IOReactorConfig.custom()
                            .setIoThreadCount(pool.ioThreads())  // shipped: one per core
                            .setSelectInterval(SELECT_INTERVAL) // shipped 1 s, see SELECT_INTERVAL
                            .build())
                    .setDefaultRequestConfig(RequestConfig.custom()
                            .setConnectionRequestTimeout(timeout) // the wait for a lease, shipped 3 min
                            .setResponseTimeout(timeout).build()) // silence on the socket, shipped none
                    .disableAutomaticRetries(); // shipped: one retry of an idempotent request on some IO errors
        }
        manager = connections.build();
        client = builder.setConnectionManager(manager).build();
        client.start();
    }

    @Override
    public CompletableFuture<Response> get(URI uri) {
        CompletableFuture<Response> done = new CompletableFuture<>();
        Future<SimpleHttpResponse> sent = client.execute(SimpleRequestBuilder.get(uri).build(),
                new FutureCallback<SimpleHttpResponse>() {
                    @Override
                    public void completed(SimpleHttpResponse r) {
                        byte[] body = r.getBodyBytes();
                        done.complete(new Response(r.getCode(), body == null ? 0 : body.length));
                    }

                    @Override
                    public void failed(Exception e) {
                        done.completeExceptionally(e);
                    }

                    @Override
                    public void cancelled() {
                        done.completeExceptionally(new CancellationException("cancelled by the client"));
                    }
                });
        return pool.bound(done, e -> sent.cancel(true)); // a timeout frees the lease or its queue place
    }

    @Override
    public Map<String, Long> pool() {
        PoolStats s = manager.getTotalStats(); // takes the pool's lock, as a lease does
        return Map.of("leased", (long) s.getLeased(), "pending", (long) s.getPending(),
                "available", (long) s.getAvailable());
    }

    @Override
    public void close() {
        client.close(CloseMode.GRACEFUL);
    }
}
