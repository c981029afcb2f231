/*
 * java-db-webflux: TechEmpower's /db and /queries on Spring WebFlux and the Reactor Netty that
 * Spring Boot ships, each row read through R2DBC's non-blocking PostgreSQL driver from an
 * r2dbc-pool of --db-pool connections (its 10 by default). Nothing blocks: Reactor Netty's event
 * loops (max(cores, 4) of them, on Java NIO) read the request, ask the pool for a connection and
 * go on serving others; the answer is written when the rows come back. A request that finds every
 * connection taken waits in the pool's queue, not on a thread.
 *
 * As in MvcDb, a request holds one connection for all its rows, one query after another, and the
 * waits are bounded: r2dbc-pool's maxAcquireTime (2 s) for a connection, a 2-s timeout on each
 * query; then a 503 and the connection closes (Db).
 *
 * Build: make -C code rpc
 * Run:   cd code/java/rpc && $(../../tools/find-jdk)/bin/java -cp target/iom-rpc.jar:$(cat target/classpath.txt) \
 *            iom.db.FluxDb --port 8088 --db 'host=127.0.0.1 port=5432 dbname=bench user=bench' [--db-pool 16]
 * Try:   curl -s http://127.0.0.1:8088/db; curl -s 'http://127.0.0.1:8088/queries?queries=20'
 * Dataset: db-models (code/iobench/kinds/db/plans.py); chapter: book/synthesis/database.md
 */
package iom.db;

import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.pool.ConnectionPoolConfiguration;
import io.r2dbc.postgresql.PostgresqlConnectionConfiguration;
import io.r2dbc.postgresql.PostgresqlConnectionFactory;
import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ValidationDepth;
import io.netty.channel.ChannelOption;
import iom.common.Server;
import iom.db.Db.DbOptions;
import iom.rpc.spring.SpringApp;
import java.time.Duration;
import java.util.Map;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.reactor.netty.NettyServerCustomizer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.http.server.reactive.ServerHttpRequest;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

public final class FluxDb {
    private FluxDb() {}

    static final Duration TIMEOUT = Duration.ofMillis(Db.TIMEOUT_MS);

    /** r2dbc-pool of `size` connections, all opened before it is used. */
    static ConnectionPool pool(DbOptions opts, int size) {
        PostgresqlConnectionConfiguration c = PostgresqlConnectionConfiguration.builder()
                .host(opts.host()).port(opts.port()).database(opts.database()).username(opts.user())
                .connectTimeout(TIMEOUT)
                .build();
        ConnectionPool pool = new ConnectionPool(ConnectionPoolConfiguration.builder(new PostgresqlConnectionFactory(c))
                .name(opts.id).initialSize(size).maxSize(size).maxAcquireTime(TIMEOUT).maxCreateConnectionTime(TIMEOUT)
                .validationDepth(ValidationDepth.LOCAL)
                // opened 16 at a time, not reactor-pool's one after another: a resize to 256 opens in seconds
                .customizer(b -> b.sizeBetween(size, size, Math.min(size, 16)))
                .build());
        try {
            pool.warmup().block(TIMEOUT.multipliedBy(2 + size / 16));
        } catch (RuntimeException e) {
            pool.dispose();
            throw e;
        }
        return pool;
    }

    @Configuration(proxyBeanMethods = false)
    static class PoolBean {
        /** The listen backlog, as every server's (--backlog, 4,096 by default). */
        @Bean
        NettyServerCustomizer backlog(DbOptions opts) {
            return server -> server.option(ChannelOption.SO_BACKLOG, opts.contract.backlog);
        }

        @Bean(destroyMethod = "close")
        Db.Pools<ConnectionPool> pools(DbOptions opts) {
            try {
                return new Db.Pools<>(size -> pool(opts, size), ConnectionPool::dispose,
                        p -> p.getMetrics().map(m -> m.acquiredSize()).orElse(0), opts.pool(10));
            } catch (RuntimeException e) {
                throw Server.halt("connect to the database " + opts.host() + ":" + opts.port(), e);
            }
        }
    }

    // BEGIN flux-db-routes
    @RestController
    public static class Routes {
        private final Db.Pools<ConnectionPool> pools;
        private final Db.Stats stats = new Db.Stats(true);

        Routes(Db.Pools<ConnectionPool> pools) {
            this.pools = pools;
        }

        /** Between points only: opening a pool blocks, so on Reactor's thread for blocking work, not a loop. */
        @GetMapping(Db.RESIZE)
        public Mono<ResponseEntity<byte[]>> resize(@RequestParam(required = false) String size) {
            return Mono.fromCallable(() -> MvcDb.entity(Db.resize(pools, size))).subscribeOn(Schedulers.boundedElastic());
        }

        @GetMapping(Db.STATS)
        public ResponseEntity<byte[]> stats() {
            return ResponseEntity.ok().contentType(MediaType.APPLICATION_JSON).body(stats.json(pools.busy()));
        }

        @GetMapping("/db")
        public Mono<ResponseEntity<byte[]>> db() {
            return answer(1, false);
        }

        /** The query string as sent (Db.rows' rule, the C servers' too), not Spring's decoded parameters. */
        @GetMapping("/queries")
        public Mono<ResponseEntity<byte[]>> queries(ServerHttpRequest request) {
            return answer(Db.rows("/queries", request.getURI().getRawQuery()), true);
        }

        @GetMapping("/**")
        public ResponseEntity<byte[]> contract() {
            return ResponseEntity.ok().contentType(MediaType.TEXT_PLAIN).body(Db.BODY);
        }

        private Mono<ResponseEntity<byte[]>> answer(int n, boolean array) {
            int[] ids = Db.randomIds(n);
            int[] values = new int[n];
            long[] at = {0, Long.MIN_VALUE}; // asked, acquired (MIN_VALUE: no connection came)
            Mono<Connection> connection = Mono.defer(() -> {
                at[0] = System.nanoTime();
                return Mono.from(pools.current().create()).doOnNext(c -> at[1] = System.nanoTime());
            });
            return Mono.usingWhen(connection,
                            c -> Flux.range(0, n).concatMap(i -> row(c, ids[i]).doOnNext(v -> values[i] = v)).then(),
                            Connection::close)
                    .doOnTerminate(() -> {
                        long now = System.nanoTime();
                        stats.add(at[0], at[1] == Long.MIN_VALUE ? now : at[1], now);
                    })
                    .then(Mono.fromSupplier(() -> {
                        Db.answered();
                        return ResponseEntity.ok().contentType(MediaType.APPLICATION_JSON)
                                .body(Db.json(ids, values, array));
                    }))
                    .onErrorResume(e -> {
                        Db.failed(e);
                        return Mono.just(ResponseEntity.status(HttpStatus.SERVICE_UNAVAILABLE)
                                .contentType(MediaType.TEXT_PLAIN).header(HttpHeaders.CONNECTION, "close")
                                .body(Db.UNAVAILABLE.getBytes()));
                    });
        }

        /** One row's query, bounded by the 2 s every wait on the database gets. */
        private static Mono<Integer> row(Connection c, int id) {
            return Flux.from(c.createStatement(Db.SQL).bind("$1", id).execute())
                    .flatMap(r -> r.map((row, meta) -> row.get(0, Integer.class)))
                    .single()
                    .timeout(TIMEOUT);
        }
    }
    // END flux-db-routes

    public static void main(String[] args) {
        DbOptions opts = Db.parse("java-db-webflux", args);
        // R2DBC's connections run on Reactor Netty's shared event loops, whose shutdown waits out a quiet period of 2 s
        // by default: a stop (SIGTERM) would take that long for nothing
        System.setProperty("reactor.netty.ioShutdownQuietPeriod", "0");
        SpringApp.run(opts.id, opts.contract, opts, WebApplicationType.REACTIVE, Map.of(), PoolBean.class,
                Routes.class);
    }
}
