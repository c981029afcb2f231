package iom.clients;

import java.io.IOException;
import java.net.URI;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.eclipse.jetty.client.CompletableResponseListener;
import org.eclipse.jetty.client.HttpClient;
import org.eclipse.jetty.client.Request;
import org.eclipse.jetty.client.transport.HttpClientTransportOverHTTP;
import org.eclipse.jetty.io.ClientConnector;

/**
 * Jetty's HttpClient: selectors ({@code ioThreads} of them) wait on every socket and hand the work
 * to a thread pool (a QueuedThreadPool of up to 200 threads, left as shipped). As shipped, 64
 * connections per destination and a queue of 1,024 requests behind them; past that, a request is
 * rejected. With a pool, the queue is made long enough never to reject (the load driver bounds
 * what is in flight, and counts what it drops). Its transport here is HTTP/1.1 only.
 */
final class JettyDriver implements Driver {
    private final HttpClient client;
    private final Pool pool;

    JettyDriver(Pool pool) throws Exception {
        this.pool = pool;
        ClientConnector connector = new ClientConnector();
        if (!pool.shipped()) {
            connector.setSelectors(pool.ioThreads());    // shipped 1
            connector.setConnectTimeout(pool.timeout()); // shipped 5 s
        }
        client = new HttpClient(new HttpClientTransportOverHTTP(connector));
        if (!pool.shipped()) {
            client.setMaxConnectionsPerDestination(pool.connections()); // shipped 64
            client.setMaxRequestsQueuedPerDestination(1 << 20);         // shipped 1,024
        }
        client.start();
    }

    @Override
    public CompletableFuture<Response> get(URI uri) {
        Request request = client.newRequest(uri);
        if (!pool.shipped()) {
            request.timeout(pool.timeout().toMillis(), TimeUnit.MILLISECONDS); // queueing included; shipped none
        }
        CompletableFuture<Response> done = new CompletableResponseListener(request).send()
                .thenApply(r -> new Response(r.getStatus(), r.getContent().length));
        return pool.bound(done, request::abort);
    }

    @Override
    public void close() throws IOException {
        try {
            client.stop();
        } catch (Exception e) {
            throw new IOException("stopping Jetty's HttpClient", e);
        }
    }
}
