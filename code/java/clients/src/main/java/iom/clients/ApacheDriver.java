package iom.clients;

import java.net.URI;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import org.apache.hc.client5.http.async.methods.SimpleHttpResponse;
import org.apache.hc.client5.http.async.methods.SimpleRequestBuilder;
import org.apache.hc.client5.http.config.ConnectionConfig;
import org.apache.hc.client5.http.config.RequestConfig;
import org.apache.hc.client5.http.impl.async.CloseableHttpAsyncClient;
import org.apache.hc.client5.http.impl.async.HttpAsyncClientBuilder;
import org.apache.hc.client5.http.impl.async.HttpAsyncClients;
import org.apache.hc.client5.http.impl.nio.PoolingAsyncClientConnectionManagerBuilder;
import org.apache.hc.core5.concurrent.FutureCallback;
import org.apache.hc.core5.http2.HttpVersionPolicy;
import org.apache.hc.core5.io.CloseMode;
import org.apache.hc.core5.reactor.IOReactorConfig;
import org.apache.hc.core5.util.Timeout;

/**
 * Apache HttpClient 5, async: an IO reactor ({@code ioThreads} dispatcher threads) waits on every
 * socket. As shipped, 5 connections per route and 25 in all; a request waits for a lease (up to
 * 3 minutes as shipped, up to the timeout with a pool), then for its response.
 */
final class ApacheDriver implements Driver {
    private final CloseableHttpAsyncClient client;

    ApacheDriver(Pool pool) {
        PoolingAsyncClientConnectionManagerBuilder connections = PoolingAsyncClientConnectionManagerBuilder.create();
        HttpAsyncClientBuilder builder = HttpAsyncClients.custom().setVersionPolicy(HttpVersionPolicy.FORCE_HTTP_1);
        if (!pool.shipped()) {
            Timeout timeout = Timeout.of(pool.timeout());
            connections.setMaxConnPerRoute(pool.connections()).setMaxConnTotal(pool.connections())
                    .setDefaultConnectionConfig(ConnectionConfig.custom().setConnectTimeout(timeout).build());
            builder.setIOReactorConfig(IOReactorConfig.custom().setIoThreadCount(pool.ioThreads()).build())
                    .setDefaultRequestConfig(RequestConfig.custom().setConnectionRequestTimeout(timeout)
                            .setResponseTimeout(timeout).build());
        }
        client = builder.setConnectionManager(connections.build()).disableAutomaticRetries().build();
        client.start();
    }

    @Override
    public String id() {
        return "apache-hc5";
    }

    @Override
    public CompletableFuture<Response> get(URI uri) {
        CompletableFuture<Response> done = new CompletableFuture<>();
        client.execute(SimpleRequestBuilder.get(uri).build(), new FutureCallback<SimpleHttpResponse>() {
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
        return done;
    }

    @Override
    public void close() {
        client.close(CloseMode.GRACEFUL);
    }
}
