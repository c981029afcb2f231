/*
 * java-db-tomcat, java-db-tomcat-vt: TechEmpower's /db and /queries on Spring MVC and the Tomcat
 * that Spring Boot ships, each row read through pgjdbc from a HikariCP pool: the thread that
 * serves the request blocks while it waits for a pooled connection and again while the query
 * runs. Tomcat's pool of 200 platform threads (--pool sets it), or with --virtual-threads a
 * virtual thread per request; either way at most --db-pool of them (HikariCP's 10 by default)
 * hold a connection, and the rest wait in HikariCP's getConnection().
 *
 * A request takes one connection for all its rows (TechEmpower's Java implementations do the
 * same), and gives it back before the answer is written. Waits are bounded: HikariCP's
 * connectionTimeout (2 s) for a connection, pgjdbc's socketTimeout (2 s) for an answer, then the
 * request is a 503 and the connection closes (Db). Keep-alive is unlimited, as in the C servers
 * (Tomcat's shipped limit of 100 requests would add reconnects the others do not make), and the
 * listen backlog is the contract's (--backlog, 4,096 by default; Tomcat ships 100).
 *
 * Build: make -C code rpc
 * Run:   cd code/java/rpc && $(../../tools/find-jdk)/bin/java -cp target/iom-rpc.jar:$(cat target/classpath.txt) \
 *            iom.db.MvcDb --port 8088 --db 'host=127.0.0.1 port=5432 dbname=bench user=bench' [--db-pool 16] \
 *            [--virtual-threads]
 * Try:   curl -s http://127.0.0.1:8088/db; curl -s 'http://127.0.0.1:8088/queries?queries=20'
 * Dataset: db-models (code/iobench/kinds/db/plans.py); chapter: book/synthesis/database.md
 */
package iom.db;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import iom.common.Server;
import jakarta.servlet.http.HttpServletRequest;
import iom.db.Db.DbOptions;
import iom.rpc.spring.SpringApp;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import org.springframework.boot.WebApplicationType;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

public final class MvcDb {
    private MvcDb() {}

    /** HikariCP as shipped but for its size (all of it kept open: minimumIdle, and open before it is used) and the
     * 2-s bounds. */
    static HikariDataSource pool(DbOptions opts, int size) {
        HikariConfig c = new HikariConfig();
        c.setJdbcUrl("jdbc:postgresql://" + opts.host() + ":" + opts.port() + "/" + opts.database());
        c.setUsername(opts.user());
        c.setMaximumPoolSize(size);
        c.setMinimumIdle(size);
        c.setConnectionTimeout(Db.TIMEOUT_MS);
        c.setValidationTimeout(Math.min(1000, Db.TIMEOUT_MS));
        c.setInitializationFailTimeout(Db.TIMEOUT_MS);
        c.setPoolName(opts.id);
        // pgjdbc's own bounds, in seconds; as strings, since the driver reads them with Properties.getProperty
        String seconds = Integer.toString(Db.TIMEOUT_MS / 1000);
        c.addDataSourceProperty("socketTimeout", seconds);
        c.addDataSourceProperty("connectTimeout", seconds);
        c.addDataSourceProperty("loginTimeout", seconds);
        HikariDataSource pool = new HikariDataSource(c);
        // HikariCP opens one connection here and the rest in the background: wait for all of them (bounded), so that
        // a point measured after a resize meets a full pool, not PostgreSQL forking its backends
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (pool.getHikariPoolMXBean().getTotalConnections() < size && System.nanoTime() < deadline) {
            Db.sleep(5);
        }
        return pool;
    }

    @Configuration(proxyBeanMethods = false)
    static class PoolBean {
        @Bean(destroyMethod = "close")
        Db.Pools<HikariDataSource> pools(DbOptions opts) {
            try {
                return new Db.Pools<>(size -> pool(opts, size), HikariDataSource::close,
                        p -> p.getHikariPoolMXBean().getActiveConnections(), opts.pool(10));
            } catch (RuntimeException e) {
                throw Server.halt("connect to the database " + opts.host() + ":" + opts.port(), e);
            }
        }
    }

    /** Db's answer as Spring's (both Spring apps, MVC and WebFlux). */
    static ResponseEntity<byte[]> entity(Db.Answer a) {
        return ResponseEntity.status(a.status()).contentType(MediaType.parseMediaType(a.type())).body(a.body());
    }

    // BEGIN mvc-db-routes
    @RestController
    public static class Routes {
        private final Db.Pools<HikariDataSource> pools;
        private final Db.Stats stats = new Db.Stats(true);

        Routes(Db.Pools<HikariDataSource> pools) {
            this.pools = pools;
        }

        @GetMapping(Db.RESIZE)
        public ResponseEntity<byte[]> resize(@RequestParam(required = false) String size) {
            return entity(Db.resize(pools, size));
        }

        @GetMapping(Db.STATS)
        public ResponseEntity<byte[]> stats() {
            return ResponseEntity.ok().contentType(MediaType.APPLICATION_JSON).body(stats.json(pools.busy()));
        }

        @GetMapping("/db")
        public ResponseEntity<byte[]> db() {
            return answer(1, false);
        }

        /** The query string as sent (Db.rows' rule, the C servers' too), not Spring's decoded parameters. */
        @GetMapping("/queries")
        public ResponseEntity<byte[]> queries(HttpServletRequest request) {
            return answer(Db.rows("/queries", request.getQueryString()), true);
        }

        @GetMapping("/**")
        public ResponseEntity<byte[]> contract() {
            return ResponseEntity.ok().contentType(MediaType.TEXT_PLAIN).body(Db.BODY);
        }

        private ResponseEntity<byte[]> answer(int n, boolean array) {
            int[] ids = Db.randomIds(n);
            int[] values = new int[n];
            long asked = System.nanoTime(), acquired = Long.MIN_VALUE; // MIN_VALUE: no connection came
            try (Connection c = pools.current().getConnection(); PreparedStatement q = c.prepareStatement(Db.JDBC_SQL)) {
                acquired = System.nanoTime();
                for (int i = 0; i < n; i++) {
                    q.setInt(1, ids[i]);
                    try (ResultSet r = q.executeQuery()) {
                        if (!r.next()) {
                            throw new SQLException("no row of world has id " + ids[i]);
                        }
                        values[i] = r.getInt(1);
                    }
                }
            } catch (SQLException e) {
                long now = System.nanoTime();
                stats.add(asked, acquired == Long.MIN_VALUE ? now : acquired, now);
                Db.failed(e);
                return ResponseEntity.status(HttpStatus.SERVICE_UNAVAILABLE).contentType(MediaType.TEXT_PLAIN)
                        .header(HttpHeaders.CONNECTION, "close").body(Db.UNAVAILABLE.getBytes());
            }
            stats.add(asked, acquired, System.nanoTime());
            Db.answered();
            return ResponseEntity.ok().contentType(MediaType.APPLICATION_JSON).body(Db.json(ids, values, array));
        }
    }
    // END mvc-db-routes

    public static void main(String[] args) {
        boolean virtual = Arrays.asList(args).contains("--virtual-threads");
        String[] rest = Arrays.stream(args).filter(a -> !a.equals("--virtual-threads")).toArray(String[]::new);
        DbOptions opts = Db.parse(virtual ? "java-db-tomcat-vt" : "java-db-tomcat", rest);
        Map<String, Object> p = new HashMap<>();
        if (opts.contract.pool > 0) {
            p.put("server.tomcat.threads.max", opts.contract.pool);
            p.put("server.tomcat.threads.min-spare", Math.min(10, opts.contract.pool));
        }
        p.put("server.tomcat.max-keep-alive-requests", -1);
        p.put("server.tomcat.accept-count", opts.contract.backlog); // the listen backlog, as every server's (4,096)
        // HikariCP warns with a stack trace of every connection an outage breaks; Db says the outage once
        p.put("logging.level.com.zaxxer.hikari", "ERROR");
        p.put("spring.threads.virtual.enabled", virtual);
        SpringApp.run(opts.id, opts.contract, opts, WebApplicationType.SERVLET, p, PoolBean.class, Routes.class);
    }
}
