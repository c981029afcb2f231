/*
 * java-db-vertx: TechEmpower's /db and /queries on Vert.x 5 (its HTTP server, on Netty's event
 * loops over Java NIO) with its reactive PostgreSQL client: a pipelined client of --db-pool
 * connections (Vert.x's 4 by default) that sends a query without waiting for the answers before
 * it, the Java counterpart of c-db-epoll's pipelined libpq connections. One event loop per core
 * the process may use, one Vert.x instance of the server each (they share the port).
 *
 * A /queries request sends its rows' queries at once, as c-db-epoll does, and is answered when
 * the last comes back. Each query is bounded by 2 s (and a connection by the client's 2-s connect
 * timeout); then a 503 and the connection closes (Db).
 *
 * Build: make -C code rpc
 * Run:   cd code/java/rpc && $(../../tools/find-jdk)/bin/java -cp target/iom-rpc.jar:$(cat target/classpath.txt) \
 *            iom.db.VertxDb --port 8088 --db 'host=127.0.0.1 port=5432 dbname=bench user=bench' [--db-pool 4]
 * Try:   curl -s http://127.0.0.1:8088/db; curl -s 'http://127.0.0.1:8088/queries?queries=20'
 * Dataset: db-models (code/iobench/kinds/db/plans.py); its chapter, "When the wait is a database", is to come
 */
package iom.db;

import io.vertx.core.AbstractVerticle;
import io.vertx.core.DeploymentOptions;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.net.NetClientOptions;
import io.vertx.pgclient.PgBuilder;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.sqlclient.PoolOptions;
import io.vertx.sqlclient.PreparedQuery;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
import io.vertx.sqlclient.SqlClient;
import io.vertx.sqlclient.Tuple;
import iom.common.Server;
import iom.db.Db.DbOptions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

public final class VertxDb {
    private VertxDb() {}

    private static final Buffer BODY = Buffer.buffer(Db.BODY);
    private static final Buffer UNAVAILABLE = Buffer.buffer(Db.UNAVAILABLE);
    /** No wait of its own: a query goes straight into a pipeline (its time there is the query's). */
    private static final Db.Stats STATS = new Db.Stats(false);

    // BEGIN vertx-db-handler
    /** One event loop's server: each request's queries go out on the shared pipelined client. */
    static final class Loop extends AbstractVerticle {
        private final DbOptions opts;
        private final Db.Pools<SqlClient> clients;
        private final AtomicInteger port;

        Loop(DbOptions opts, Db.Pools<SqlClient> clients, AtomicInteger port) {
            this.opts = opts;
            this.clients = clients;
            this.port = port;
        }

        @Override
        public void start(Promise<Void> started) {
            HttpServerOptions o = new HttpServerOptions().setHost(opts.contract.host).setPort(opts.contract.port)
                    .setTcpNoDelay(true).setAcceptBacklog(opts.contract.backlog);
            vertx.createHttpServer(o).requestHandler(this::handle).listen()
                    .onSuccess(s -> {
                        port.set(s.actualPort());
                        started.complete();
                    })
                    .onFailure(started::fail);
        }

        private void handle(HttpServerRequest req) {
            String path = req.path();
            if (path.equals(Db.STATS)) {
                req.response().putHeader("Content-Type", Db.JSON).end(Buffer.buffer(STATS.json()));
                return;
            }
            if (path.equals(Db.RESIZE)) {
                resize(req);
                return;
            }
            int n = Db.rows(path, req.query());
            if (n == 0) {
                req.response().putHeader("Content-Type", "text/plain").end(BODY);
                return;
            }
            boolean array = Db.array(path);
            int[] ids = Db.randomIds(n);
            int[] values = new int[n];
            long asked = System.nanoTime();
            PreparedQuery<RowSet<Row>> query = clients.current().preparedQuery(Db.SQL);
            List<Future<RowSet<Row>>> rows = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                int at = i;
                rows.add(query.execute(Tuple.of(ids[i])).timeout(Db.TIMEOUT_MS, TimeUnit.MILLISECONDS)
                        .onSuccess(r -> values[at] = r.iterator().next().getInteger(0)));
            }
            Future.all(rows).onComplete(done -> {
                STATS.add(asked, asked, System.nanoTime());
                if (done.succeeded()) {
                    Db.answered();
                    req.response().putHeader("Content-Type", Db.JSON).end(Buffer.buffer(Db.json(ids, values, array)));
                } else {
                    Db.failed(done.cause());
                    // Vert.x keeps a connection open whatever the answer's Connection header says: closed here
                    req.response().setStatusCode(503).putHeader("Content-Type", "text/plain")
                            .putHeader("Connection", "close").end(UNAVAILABLE)
                            .onComplete(sent -> req.connection().close());
                }
            });
        }

        /** Between points only: a new client (it connects as queries come), then the old one closed. */
        private void resize(HttpServerRequest req) {
            int n = Db.poolSize(req.getParam("size"));
            if (n < 0) {
                req.response().setStatusCode(400).putHeader("Content-Type", "text/plain")
                        .end("size wants a whole number from 1 to " + Db.MAX_POOL + "\n");
                return;
            }
            vertx.executeBlocking(() -> {
                clients.resize(n);
                return n;
            }).onSuccess(size -> req.response().putHeader("Content-Type", Db.JSON).end(Buffer.buffer(Db.resized(size))))
                    .onFailure(e -> {
                        Db.failed(e);
                        req.response().setStatusCode(503).putHeader("Content-Type", "text/plain").end(UNAVAILABLE);
                    });
        }
    }
    // END vertx-db-handler

    /** Vert.x's pipelined client of `size` connections; it connects as queries come. */
    static SqlClient client(Vertx vertx, DbOptions opts, int size) {
        PgConnectOptions connect = new PgConnectOptions().setHost(opts.host()).setPort(opts.port())
                .setDatabase(opts.database()).setUser(opts.user()).setCachePreparedStatements(true);
        return PgBuilder.client().with(new PoolOptions().setMaxSize(size)
                        .setConnectionTimeout(Db.TIMEOUT_MS).setConnectionTimeoutUnit(TimeUnit.MILLISECONDS))
                .with(new NetClientOptions().setConnectTimeout(Db.TIMEOUT_MS).setTcpNoDelay(true))
                .connectingTo(connect).using(vertx).build();
    }

    public static void main(String[] args) {
        DbOptions opts = Db.parse("java-db-vertx", args);
        int loops = Runtime.getRuntime().availableProcessors();
        Vertx vertx = Vertx.vertx(new VertxOptions().setEventLoopPoolSize(loops));
        Db.Pools<SqlClient> clients = new Db.Pools<>(size -> client(vertx, opts, size),
                SqlClient::close, opts.pool(4));
        AtomicInteger port = new AtomicInteger(opts.contract.port);
        try {
            // connect first: a database that cannot be reached stops the start, as in the other servers
            clients.current().query("SELECT 1").execute().await(Db.TIMEOUT_MS * 2L, TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            throw Server.halt("connect to the database " + opts.host() + ":" + opts.port(), e);
        }
        try {
            // every loop's server listens on the contract's port; on port 0, Vert.x gives them all the one it picks
            vertx.deployVerticle(() -> new Loop(opts, clients, port), new DeploymentOptions().setInstances(loops))
                    .await(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw Server.halt("listen on " + opts.contract.host + ":" + opts.contract.port, e);
        }
        Server.stopOnSignal(() -> vertx.close().await(5, TimeUnit.SECONDS));
        Server.ready(port.get());
    }
}
