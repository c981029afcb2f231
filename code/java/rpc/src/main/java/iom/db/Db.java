/*
 * What the Java database servers share (java-db-tomcat, java-db-tomcat-vt: MvcDb; java-db-webflux:
 * FluxDb; java-db-vertx: VertxDb), so that only how each waits on PostgreSQL differs, and the
 * bytes each answers are the C servers' (code/c/common/db.c):
 *
 *   GET /db                  {"id":N,"randomNumber":M}: one row of World, its id drawn at random
 *   GET /queries?queries=N   [{"id":..,"randomNumber":..},...]: N rows, each its own query
 *                            (TechEmpower's rule for N: not a number or below 1 is 1, above 500 is 500;
 *                            the last queries= of the query string counts, read as sent, not
 *                            percent-decoded, as the C servers read it: rows())
 *   GET /db-stats            {"requests":R,"wait_ns":W,"query_ns":Q,"held":H}: since the start, the requests that
 *                            asked the database, the time they waited for a pooled connection (only where
 *                            a request takes one for itself: HikariCP, r2dbc-pool) and the time from their
 *                            first query sent to their last row back (Stats; the harness reads it before
 *                            and after each point); and the pool's connections held right now (a pool's
 *                            servers: 0 between points, unless a connection leaked)
 *   GET /db-pool?size=N      {"pool":N}: a pool of N connections in place of the one in use (opened first, then
 *                            the old one closed), so that the harness sweeps the pool's size in one process
 *                            whose JIT stays warm (Pools); 400 for a size not from 1 to 10,000, 503 if the
 *                            new pool cannot be opened (the old one stays)
 *   any other GET            the contract's body (GET / answers "Hello, world")
 *   a database that is down or answers nothing within 2 s: 503 "Database Unavailable", then the
 *   connection closes; the outage is said once on stderr ("database: ..."), in the driver's words.
 *   Each wait is bounded on its own: a request that waits 2 s for a pooled connection is a 503 too
 *   (HikariCP, r2dbc-pool), so under overload these servers shed requests, where c-db-threadpool
 *   leaves connections unserved (the harness's conns_served) and the pipelined servers queue them.
 *
 * The options are the contract's (--port, --host, ...) and two of the database's:
 *   --db DSN      libpq's keyword form, as the harness gives every database server
 *                 ("host=127.0.0.1 port=5432 dbname=bench user=bench"); required
 *   --db-pool N   the connections the server holds to the database (each framework's own default
 *                 when absent: HikariCP 10, r2dbc-pool 10; Vert.x 2 per event loop, as c-db-epoll)
 *
 * Dataset: db-models (code/iobench/kinds/db/plans.py); chapter: book/synthesis/database.md
 */
package iom.db;

import iom.common.Http;
import iom.common.Options;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;
import java.util.function.IntFunction;
import java.util.function.ToIntFunction;

public final class Db {
    private Db() {}

    public static final int WORLD_ROWS = 10_000;
    public static final int MAX_QUERIES = 500;
    /** Every wait on the database (a connection from the pool, a query's answer) ends within this. */
    public static final int TIMEOUT_MS = 2000;
    public static final String SQL = "SELECT randomnumber FROM world WHERE id = $1";
    public static final String JDBC_SQL = "SELECT randomnumber FROM world WHERE id = ?";
    public static final String JSON = "application/json";
    public static final String UNAVAILABLE = "Database Unavailable\n";
    public static final byte[] BODY = Http.BODY.getBytes(StandardCharsets.US_ASCII);

    /** The options of a database server: the contract's, the database's connection string and pool. */
    public static final class DbOptions {
        public final String id;
        public final Options contract;
        public final Map<String, String> dsn;
        /** 0: the framework's own default. */
        public final int pool;

        private DbOptions(String id, Options contract, Map<String, String> dsn, int pool) {
            this.id = id;
            this.contract = contract;
            this.dsn = dsn;
            this.pool = pool;
        }

        public String host() {
            return dsn.getOrDefault("host", "127.0.0.1");
        }

        public int port() {
            return Integer.parseInt(dsn.getOrDefault("port", "5432"));
        }

        public String database() {
            return dsn.getOrDefault("dbname", user());
        }

        public String user() {
            return dsn.getOrDefault("user", System.getProperty("user.name"));
        }

        public int pool(int frameworkDefault) {
            return pool > 0 ? pool : frameworkDefault;
        }
    }

    public static DbOptions parse(String id, String[] args) {
        List<String> rest = new ArrayList<>();
        String dsn = null;
        int pool = 0;
        for (int i = 0; i < args.length; i++) {
            String value = i + 1 < args.length ? args[i + 1] : null;
            switch (args[i]) {
                case "--db" -> {
                    dsn = value;
                    i++;
                }
                case "--db-pool" -> {
                    pool = poolSize(id, value);
                    i++;
                }
                default -> rest.add(args[i]);
            }
        }
        Options contract = Options.parse(id, rest.toArray(String[]::new));
        if (dsn == null || dsn.isBlank()) {
            usage(id, "--db DSN is required (libpq's form: host=127.0.0.1 port=5432 dbname=bench user=bench)");
        }
        Map<String, String> parsed = keywords(dsn);
        if (parsed == null) {
            usage(id, "--db wants libpq's keyword=value form, not '" + dsn + "'");
        }
        if (parsed.getOrDefault("host", "127.0.0.1").startsWith("/")) {
            usage(id, "--db: the Java drivers reach PostgreSQL over TCP only; give host=127.0.0.1, not a socket folder");
        }
        return new DbOptions(id, contract, parsed, pool);
    }

    /** libpq's "key=value key=value" (no quoting: the harness's DSNs need none); null if malformed. */
    static Map<String, String> keywords(String dsn) {
        Map<String, String> out = new LinkedHashMap<>();
        for (String part : dsn.trim().split("\\s+")) {
            int eq = part.indexOf('=');
            if (eq <= 0) {
                return null;
            }
            out.put(part.substring(0, eq), part.substring(eq + 1));
        }
        if (out.containsKey("port")) {
            try {
                int port = Integer.parseInt(out.get("port"));
                if (port < 1 || port > 65535) {
                    return null;
                }
            } catch (NumberFormatException e) {
                return null;
            }
        }
        return out;
    }

    private static int poolSize(String id, String value) {
        try {
            int n = Integer.parseInt(value == null ? "" : value);
            if (n >= 1 && n <= 10_000) {
                return n;
            }
        } catch (NumberFormatException e) {
            // below
        }
        usage(id, "--db-pool wants a whole number from 1 to 10000, not '" + value + "'");
        return 0;
    }

    private static void usage(String id, String why) {
        System.err.println(id + ": " + why);
        System.err.println("usage: " + id + " --db DSN [--db-pool N] [contract flags: --port N --host ADDR --pool N]");
        System.exit(1);
    }

    // ---- routes ----------------------------------------------------------------------------

    /** The rows a request asks for: 0 for the contract's route, 1 for /db, N for /queries. */
    public static int rows(String path, String query) {
        if (path.equals("/db")) {
            return 1;
        }
        if (!path.equals("/queries")) {
            return 0;
        }
        int n = 1;
        if (query != null) {
            for (String param : query.split("&")) {
                if (param.startsWith("queries=")) {
                    n = count(param.substring(8));
                }
            }
        }
        return n;
    }

    /** TechEmpower's rule: not a number or below 1 is 1, above 500 is 500. */
    static int count(String digits) {
        if (digits.isEmpty()) {
            return 1;
        }
        long n = 0;
        for (int i = 0; i < digits.length(); i++) {
            char c = digits.charAt(i);
            if (c < '0' || c > '9') {
                return 1;
            }
            n = Math.min(n * 10 + (c - '0'), MAX_QUERIES + 1);
        }
        return n < 1 ? 1 : (int) Math.min(n, MAX_QUERIES);
    }

    /** True for /queries, whose answer is an array even of one row. */
    public static boolean array(String path) {
        return path.equals("/queries");
    }

    public static int randomId() {
        return 1 + ThreadLocalRandom.current().nextInt(WORLD_ROWS);
    }

    public static int[] randomIds(int n) {
        int[] ids = new int[n];
        for (int i = 0; i < n; i++) {
            ids[i] = randomId();
        }
        return ids;
    }

    /** The answer's JSON, byte for byte the C servers': no spaces, rows in the order asked. */
    public static byte[] json(int[] ids, int[] values, boolean array) {
        StringBuilder b = new StringBuilder(array ? 32 * ids.length + 2 : 40);
        if (array) {
            b.append('[');
        }
        for (int i = 0; i < ids.length; i++) {
            if (i > 0) {
                b.append(',');
            }
            b.append("{\"id\":").append(ids[i]).append(",\"randomNumber\":").append(values[i]).append('}');
        }
        if (array) {
            b.append(']');
        }
        return b.toString().getBytes(StandardCharsets.US_ASCII);
    }

    // ---- where a request's time goes ---------------------------------------------------------

    /** Counts since the start, for GET /db-stats: cheap adders, no lock and no log per request. */
    public static final class Stats {
        private final boolean pooled;
        private final LongAdder requests = new LongAdder();
        private final LongAdder waitNs = new LongAdder();
        private final LongAdder queryNs = new LongAdder();

        /** pooled: a request waits for a connection of its own (its wait is counted apart from its queries). */
        public Stats(boolean pooled) {
            this.pooled = pooled;
        }

        /** One request: asked at {@code asked}, a connection in hand at {@code acquired}, done at {@code done}. */
        public void add(long asked, long acquired, long done) {
            requests.increment();
            waitNs.add(acquired - asked);
            queryNs.add(done - acquired);
        }

        public byte[] json() {
            return json(-1);
        }

        /** held: the pool's connections that requests hold now (-1: not said); between points, 0 unless one leaked. */
        public byte[] json(int held) {
            String wait = (pooled ? ",\"wait_ns\":" + waitNs.sum() : "") + (held >= 0 ? ",\"held\":" + held : "");
            return ("{\"requests\":" + requests.sum() + wait + ",\"query_ns\":" + queryNs.sum() + "}")
                    .getBytes(StandardCharsets.US_ASCII);
        }
    }

    public static final String STATS = "/db-stats";
    public static final String RESIZE = "/db-pool";
    public static final int MAX_POOL = 10_000;

    /** The pool in use, and its replacement by one of another size (GET /db-pool?size=N). */
    public static final class Pools<P> implements AutoCloseable {
        private final IntFunction<P> open;
        private final Consumer<P> close;
        private final ToIntFunction<P> busy;
        private volatile P current;
        private volatile int size;

        /**
         * open(n): a pool of n connections, all of them open, or a RuntimeException saying why not; busy(p): how
         * many of p's connections requests hold now.
         */
        public Pools(IntFunction<P> open, Consumer<P> close, ToIntFunction<P> busy, int size) {
            this.open = open;
            this.close = close;
            this.busy = busy;
            this.current = open.apply(size);
            this.size = size;
        }

        public P current() {
            return current;
        }

        /** The current pool's connections that requests hold now. */
        public int busy() {
            return busy.applyAsInt(current);
        }

        /**
         * A pool of n in place of the current one: new requests take the new pool at once; the old one is closed
         * once the requests holding its connections have given them back (at most TIMEOUT_MS later, the longest
         * any of them may wait on the database), so that none of them is cut off.
         */
        public synchronized void resize(int n) {
            if (n == size) {
                return;
            }
            P old = current;
            current = open.apply(n);
            size = n;
            long deadline = System.nanoTime() + TIMEOUT_MS * 1_000_000L;
            while (busy.applyAsInt(old) > 0 && System.nanoTime() < deadline) {
                sleep(10);
            }
            close.accept(old);
        }

        @Override
        public void close() {
            close.accept(current);
        }
    }

    /** Sleep, for a wait that polls (a pool filling, a pool draining). */
    public static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** The size a GET /db-pool asks for, or -1 if it is not a whole number from 1 to MAX_POOL. */
    public static int poolSize(String size) {
        try {
            int n = Integer.parseInt(size == null ? "" : size);
            return n >= 1 && n <= MAX_POOL ? n : -1;
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /** An answer whatever the framework: its status, content type and body. */
    public record Answer(int status, String type, byte[] body) {}

    /** GET /db-pool?size=N on a pool of pools: 200 {"pool":N}, 400 for a bad size, 503 if the new pool failed. */
    public static Answer resize(Pools<?> pools, String size) {
        int n = poolSize(size);
        if (n < 0) {
            return new Answer(400, "text/plain", ("size wants a whole number from 1 to " + MAX_POOL + "\n")
                    .getBytes(StandardCharsets.US_ASCII));
        }
        try {
            pools.resize(n);
        } catch (RuntimeException e) {
            failed(e);
            return new Answer(503, "text/plain", UNAVAILABLE.getBytes(StandardCharsets.US_ASCII));
        }
        return new Answer(200, JSON, resized(n));
    }

    public static byte[] resized(int n) {
        return ("{\"pool\":" + n + "}").getBytes(StandardCharsets.US_ASCII);
    }

    // ---- outages ---------------------------------------------------------------------------

    private static final AtomicBoolean DOWN = new AtomicBoolean();

    /** A failed wait on the database: said on stderr once per outage, in the driver's words. */
    public static void failed(Throwable e) {
        if (DOWN.compareAndSet(false, true)) {
            Throwable root = e;
            while (root.getCause() != null && root.getCause() != root) {
                root = root.getCause();
            }
            String what = root.getMessage() != null ? root.getMessage() : root.getClass().getSimpleName();
            System.err.println("database: " + what.strip().replace('\n', ' '));
            System.err.flush();
        }
    }

    /** A query that was answered: the next failure is a new outage, said again. */
    public static void answered() {
        if (DOWN.get()) {
            DOWN.set(false);
        }
    }
}
