package iom.clients;

import java.io.IOException;
import java.net.URI;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.ConnectionPool;
import okhttp3.Dispatcher;
import okhttp3.OkHttpClient;
import okhttp3.Protocol;
import okhttp3.Request;
import okhttp3.ResponseBody;

/**
 * OkHttp: no event loop; its dispatcher runs each call on a thread of its own, which blocks in the
 * socket's read. As shipped, 64 calls at a time and 5 per host; the others wait in the
 * dispatcher's queue, which has no bound. With a pool, {@code connections} calls at a time (per
 * host and in all), and as many idle connections kept; it has no IO threads to size (its
 * dispatcher's pool grows to one thread per running call).
 */
final class OkHttpDriver implements Driver {
    private final OkHttpClient client;
    private final Pool pool;

    OkHttpDriver(Pool pool) {
        this.pool = pool;
        OkHttpClient.Builder builder = new OkHttpClient.Builder()
                .protocols(List.of(Protocol.HTTP_1_1)); // shipped [HTTP_2, HTTP_1_1]; h2 only over TLS
        if (!pool.shipped()) {
            Dispatcher dispatcher = new Dispatcher();
            dispatcher.setMaxRequests(pool.connections());        // shipped 64
            dispatcher.setMaxRequestsPerHost(pool.connections()); // shipped 5
            builder.dispatcher(dispatcher)
                    .connectionPool(new ConnectionPool(pool.connections(), 5, TimeUnit.MINUTES)) // shipped 5 idle, 5 min
                    .callTimeout(pool.timeout())    // shipped none; starts when a call leaves the queue
                    .connectTimeout(pool.timeout()) // shipped 10 s
                    .readTimeout(pool.timeout())    // shipped 10 s of silence
                    .writeTimeout(pool.timeout())   // shipped 10 s
                    .retryOnConnectionFailure(false); // shipped true; a request is sent once, as by every driver
        }
        client = builder.build();
    }

    @Override
    public CompletableFuture<Response> get(URI uri) {
        CompletableFuture<Response> done = new CompletableFuture<>();
        Call call = client.newCall(new Request.Builder().url(uri.toString()).build());
        call.enqueue(new Callback() {
            @Override
            public void onFailure(Call c, IOException e) {
                done.completeExceptionally(e);
            }

            @Override
            public void onResponse(Call c, okhttp3.Response r) {
                try (r; ResponseBody body = r.body()) {
                    done.complete(new Response(r.code(), body == null ? 0 : body.bytes().length));
                } catch (IOException e) {
                    done.completeExceptionally(e);
                }
            }
        });
        return pool.bound(done, e -> call.cancel()); // a queued call then fails as soon as it runs
    }

    @Override
    public void close() {
        client.dispatcher().executorService().shutdown();
        client.connectionPool().evictAll();
    }
}
