/*
 * java-db-vertx: TechEmpower's /db and /queries on Vert.x 5 (its HTTP server, on Netty's event
 * loops over Java NIO) with its reactive PostgreSQL client, used as c-db-epoll uses libpq: each
 * event loop holds --db-pool connections of its own (2 by default, c-db-epoll's --db-conns) and
 * sends every query at once, pipelined, on the one with the fewest queries in flight. One event
 * loop per core the process may use, one Vert.x instance of the server each (they share the port).
 *
 * Not Vert.x's pooled, pipelined SqlClient (PgBuilder.client()): that fills one connection's
 * pipeline (256 queries) before it opens another, so its pool size is a ceiling, not the
 * connections in use, and a sweep of it would measure nothing at /db.
 *
 * A /queries request sends its rows' queries at once and is answered when the last comes back;
 * each query is bounded by 2 s, and so is a connection's opening; then a 503 and the connection
 * closes (Db). A connection that closed is opened again when a query needs it, at most once a
 * second, as c-db-epoll does.
 *
 * Build: make -C code rpc
 * Run:   cd code/java/rpc && $(../../tools/find-jdk)/bin/java -cp target/iom-rpc.jar:$(cat target/classpath.txt) \
 *            iom.db.VertxDb --port 8088 --db 'host=127.0.0.1 port=5432 dbname=bench user=bench' [--db-pool 2]
 * Try:   curl -s http://127.0.0.1:8088/db; curl -s 'http://127.0.0.1:8088/queries?queries=20'
 * Dataset: db-models (code/iobench/kinds/db/plans.py); chapter: book/synthesis/database.md
 */
package iom.db;

import io.vertx.core.AbstractVerticle;
import io.vertx.core.Context;
import io.vertx.core.DeploymentOptions;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.pgclient.PgConnection;
import io.vertx.sqlclient.Tuple;
import iom.common.Server;
import iom.db.Db.DbOptions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

public final class VertxDb {
    private VertxDb() {}

    private static final Buffer BODY = Buffer.buffer(Db.BODY);
    private static final Buffer UNAVAILABLE = Buffer.buffer(Db.UNAVAILABLE);
    /** No wait of its own: a query goes straight into a pipeline (its time there is the query's). */
    private static final Db.Stats STATS = new Db.Stats(false);

    /** One pipelined connection of a loop, used only on that loop's thread. */
    static final class Pipe {
        PgConnection conn;   // null while not open
        boolean opening;
        boolean retired;     // replaced by a resize: closed once nothing is in flight on it
        int inflight;
        long retryAt;        // after a failure, open again no sooner than this (ms)
    }

    // BEGIN vertx-db-handler
    /** One event loop's server and its own pipelined connections. */
    static final class Loop extends AbstractVerticle {
        private final DbOptions opts;
        private final PgConnectOptions connect;
        private final AtomicInteger port;
        private Pipe[] pipes = new Pipe[0];

        /** This loop's context, for a resize asked on another loop. */
        Context loopContext() {
            return context;
        }

        Loop(DbOptions opts, PgConnectOptions connect, AtomicInteger port) {
            this.opts = opts;
            this.connect = connect;
            this.port = port;
        }

        @Override
        public void start(Promise<Void> started) {
            HttpServerOptions o = new HttpServerOptions().setHost(opts.contract.host).setPort(opts.contract.port)
                    .setTcpNoDelay(true).setAcceptBacklog(opts.contract.backlog);
            resize(opts.pool(2))
                    .compose(opened -> vertx.createHttpServer(o).requestHandler(this::handle).listen())
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
                int n = Db.poolSize(req.getParam("size"));
                if (n < 0) {
                    req.response().setStatusCode(400).putHeader("Content-Type", "text/plain")
                            .end("size wants a whole number from 1 to " + Db.MAX_POOL + "\n");
                    return;
                }
                resizeAll(n).onComplete(done -> req.response().putHeader("Content-Type", Db.JSON)
                        .end(Buffer.buffer(Db.resized(n))));
                return;
            }
            int n = Db.rows(path, req.query());
            if (n == 0) {
                req.response().putHeader("Content-Type", "text/plain").end(BODY);
                return;
            }
            boolean array = Db.array(path);
            // BEGIN vertx-db-rows
            int[] ids = Db.randomIds(n);
            int[] values = new int[n];
            long asked = System.nanoTime();
            List<Future<Integer>> rows = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                int at = i;
                rows.add(query(ids[i]).onSuccess(v -> values[at] = v));
            }
            Future.join(rows).onComplete(done -> {
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

        /** One row's query on the open pipe with the fewest in flight (opening those that are down, at most once a
         * second each); failed at once if none is open. */
        private Future<Integer> query(int id) {
            Pipe best = null;
            long now = System.currentTimeMillis();
            for (Pipe p : pipes) {
                if (p.conn == null && !p.opening && now >= p.retryAt) {
                    open(p);
                }
                if (p.conn != null && (best == null || p.inflight < best.inflight)) {
                    best = p;
                }
            }
            if (best == null) {
                return Future.failedFuture("no connection to the database is open");
            }
            Pipe p = best;
            p.inflight++;
            return p.conn.preparedQuery(Db.SQL).execute(Tuple.of(id))
                    .timeout(Db.TIMEOUT_MS, TimeUnit.MILLISECONDS)
                    .map(r -> r.iterator().next().getInteger(0))
                    .andThen(done -> {
                        p.inflight--;
                        retireIfIdle(p);
                    });
        }
        // END vertx-db-rows

        private Future<Void> open(Pipe p) {
            p.opening = true;
            return PgConnection.connect(vertx, connect).timeout(Db.TIMEOUT_MS, TimeUnit.MILLISECONDS)
                    .andThen(done -> p.opening = false)
                    .onSuccess(c -> {
                        if (p.retired) {
                            c.close();
                            return;
                        }
                        p.conn = c;
                        c.closeHandler(v -> {
                            if (p.conn == c) {
                                p.conn = null;
                            }
                        });
                    })
                    .onFailure(e -> {
                        Db.failed(e);
                        p.retryAt = System.currentTimeMillis() + 1000;
                    })
                    .mapEmpty();
        }

        /** This loop's n pipes in place of its pipes: the new ones opened, the old closed as their queries end. */
        Future<Void> resize(int n) {
            Pipe[] old = pipes;
            Pipe[] fresh = new Pipe[n];
            List<Future<Void>> opened = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                fresh[i] = new Pipe();
                opened.add(open(fresh[i]));
            }
            pipes = fresh;
            for (Pipe p : old) {
                p.retired = true;
                retireIfIdle(p);
            }
            return Future.join(opened).otherwiseEmpty().mapEmpty();
        }

        private static void retireIfIdle(Pipe p) {
            if (p.retired && p.inflight == 0 && p.conn != null) {
                PgConnection c = p.conn;
                p.conn = null;
                c.close();
            }
        }
    }
    // END vertx-db-handler

    /** Every loop, so that GET /db-pool resizes them all, each on its own thread. */
    private static final List<Loop> LOOPS = new CopyOnWriteArrayList<>();

    static Future<Void> resizeAll(int n) {
        List<Future<Void>> all = new ArrayList<>();
        for (Loop l : LOOPS) {
            Context c = l.loopContext();
            Promise<Void> done = Promise.promise();
            c.runOnContext(v -> l.resize(n).onComplete(done));
            all.add(done.future());
        }
        return Future.join(all).mapEmpty();
    }

    public static void main(String[] args) {
        DbOptions opts = Db.parse("java-db-vertx", args);
        int loops = Runtime.getRuntime().availableProcessors();
        Vertx vertx = Vertx.vertx(new VertxOptions().setEventLoopPoolSize(loops));
        PgConnectOptions connect = new PgConnectOptions().setHost(opts.host()).setPort(opts.port())
                .setDatabase(opts.database()).setUser(opts.user()).setCachePreparedStatements(true);
        try {
            // a database that cannot be reached stops the start, as in the other servers
            PgConnection.connect(vertx, connect).compose(c -> c.query("SELECT 1").execute().eventually(c::close))
                    .await(Db.TIMEOUT_MS * 2L, TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            throw Server.halt("connect to the database " + opts.host() + ":" + opts.port(), e);
        }
        AtomicInteger port = new AtomicInteger(opts.contract.port);
        try {
            // every loop's server listens on the contract's port; on port 0, Vert.x gives them all the one it picks
            vertx.deployVerticle(() -> {
                Loop l = new Loop(opts, connect, port);
                LOOPS.add(l);
                return l;
            }, new DeploymentOptions().setInstances(loops)).await(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw Server.halt("listen on " + opts.contract.host + ":" + opts.contract.port, e);
        }
        Server.stopOnSignal(() -> vertx.close().await(5, TimeUnit.SECONDS));
        Server.ready(port.get());
    }
}
