package iom.clients;

import java.net.URI;
import java.util.concurrent.CompletableFuture;
import org.asynchttpclient.AsyncHttpClient;
import org.asynchttpclient.DefaultAsyncHttpClientConfig;
import org.asynchttpclient.Dsl;

/**
 * async-http-client: Netty event loops ({@code ioThreads} of them) wait on every socket; a request's
 * future completes on one of them. As shipped it has no limit on connections, so every request in
 * flight opens one; with a pool, a request waits up to the timeout for a free connection
 * ({@code acquireFreeChannelTimeout}), in the thread that submits it.
 */
final class AhcDriver implements Driver {
    private final AsyncHttpClient client;

    AhcDriver(Pool pool) {
        DefaultAsyncHttpClientConfig.Builder config = Dsl.config();
        if (!pool.shipped()) {
            config.setMaxConnections(pool.connections())
                    .setMaxConnectionsPerHost(pool.connections())
                    .setAcquireFreeChannelTimeout((int) pool.timeout().toMillis())
                    .setIoThreadsCount(pool.ioThreads())
                    .setConnectTimeout(pool.timeout())
                    .setRequestTimeout(pool.timeout())
                    .setReadTimeout(pool.timeout())
                    .setMaxRequestRetry(0); // a request is sent once, as by every other driver
        }
        client = Dsl.asyncHttpClient(config);
    }

    @Override
    public String id() {
        return "ahc";
    }

    @Override
    public CompletableFuture<Response> get(URI uri) {
        return client.prepareGet(uri.toString()).execute().toCompletableFuture()
                .thenApply(r -> new Response(r.getStatusCode(), r.getResponseBodyAsBytes().length));
    }

    @Override
    public void close() throws Exception {
        client.close();
    }
}
