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
 * host and in all), and as many idle connections kept; it has no IO threads to size.
 */
final class OkHttpDriver implements Driver {
    private final OkHttpClient client;

    OkHttpDriver(Pool pool) {
        OkHttpClient.Builder builder = new OkHttpClient.Builder().protocols(List.of(Protocol.HTTP_1_1))
                .retryOnConnectionFailure(false);
        if (!pool.shipped()) {
            Dispatcher dispatcher = new Dispatcher();
            dispatcher.setMaxRequests(pool.connections());
            dispatcher.setMaxRequestsPerHost(pool.connections());
            builder.dispatcher(dispatcher)
                    .connectionPool(new ConnectionPool(pool.connections(), 5, TimeUnit.MINUTES))
                    .callTimeout(pool.timeout())
                    .connectTimeout(pool.timeout())
                    .readTimeout(pool.timeout())
                    .writeTimeout(pool.timeout());
        }
        client = builder.build();
    }

    @Override
    public String id() {
        return "okhttp";
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
        done.whenComplete((r, e) -> {
            if (done.isCancelled()) {
                call.cancel();
            }
        });
        return done;
    }

    @Override
    public void close() {
        client.dispatcher().executorService().shutdown();
        client.connectionPool().evictAll();
    }
}
