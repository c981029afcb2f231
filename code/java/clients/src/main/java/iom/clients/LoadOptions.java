package iom.clients;

import java.net.URI;
import java.time.Duration;

/**
 * OpenLoad's command line, parsed and checked: every mistake is one {@link Usage} line, which
 * {@link OpenLoad#main} prints before exiting 2.
 */
record LoadOptions(String mode, String client, URI uri, double rate, double warmupRate, double durationS, double warmupS,
                   int connections, int ioThreads, double timeoutS, int maxInFlight, boolean shipped,
                   String hlog, int requests, long parkUs, String threadDump, String timeline) {

    static final String USAGE = """
            usage: OpenLoad --client ID [options] URL
              --client ID          one of %s
              --mode open|burst|park   open (default): a constant arrival rate;
                                   burst: K requests at once, no bound on in flight (write-up 003's loop);
                                   park: one thread parks P us, submits one request, repeats (its JMH shape)
              --rate R             open: requests per second; request i is intended at t0 + i/R
              --duration S         open, park: measured seconds
              --warmup S           open, park: seconds of the same load before them, counted apart (0)
              --warmup-rate R      open: the warm-up's rate instead (a rate the client keeps up with, so that the
                                   measured window does not start behind a queue the warm-up left)
              --requests K         burst: how many
              --park-us P          park: microseconds between submissions
              --connections N      the pool, the same for every client (16)
              --io-threads T       threads waiting on sockets, where the client has them (1)
              --timeout S          one timeout for a whole request, queueing included (5)
              --max-in-flight M    open: a request that finds M in flight is dropped, counted (1000)
              --shipped            every client as its library ships it (no pool, no timeout of ours)
              --hlog FILE          an HdrHistogram interval log: 1 s intervals, microseconds
              --thread-dump FILE   every thread's name, state, CPU time and stack, once: halfway through the
                                   measured window (burst: 1 s after it starts)
              --timeline FILE      every 100 ms, one JSON line: requests sent, answered, failed and in flight, CPU
                                   by group of threads, the collector's pauses, the heap, the pool's own account
            """.formatted(Drivers.IDS);

    /** A bad command line: the message is the one line to print. */
    static final class Usage extends Exception {
        private static final long serialVersionUID = 1L;

        Usage(String message) {
            super(message);
        }
    }

    static LoadOptions parse(String... args) throws Usage {
        String mode = "open", client = null, hlog = null, threadDump = null, timeline = null, url = null;
        double rate = 0, warmupRate = 0, duration = 0, warmup = 0, timeout = 5;
        int connections = 16, ioThreads = 1, maxInFlight = 1000, requests = 0;
        long parkUs = -1;
        boolean shipped = false;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.equals("--shipped")) {
                shipped = true;
                continue;
            }
            if (!a.startsWith("--")) {
                if (url != null) {
                    throw new Usage("one URL only; got " + url + " and " + a);
                }
                url = a;
                continue;
            }
            if (i + 1 == args.length) {
                throw new Usage(a + " needs a value");
            }
            String v = args[++i];
            switch (a) {
                case "--mode" -> mode = v;
                case "--client" -> client = v;
                case "--hlog" -> hlog = v;
                case "--thread-dump" -> threadDump = v;
                case "--timeline" -> timeline = v;
                case "--rate" -> rate = positive(a, v);
                case "--warmup-rate" -> warmupRate = positive(a, v);
                case "--duration" -> duration = positive(a, v);
                case "--warmup" -> warmup = number(a, v, 0);
                case "--timeout" -> timeout = positive(a, v);
                case "--connections" -> connections = (int) whole(a, v, 1);
                case "--io-threads" -> ioThreads = (int) whole(a, v, 1);
                case "--max-in-flight" -> maxInFlight = (int) whole(a, v, 1);
                case "--requests" -> requests = (int) whole(a, v, 1);
                case "--park-us" -> parkUs = whole(a, v, 0);
                default -> throw new Usage("unknown option " + a);
            }
        }
        if (client == null || !Drivers.IDS.contains(client)) {
            throw new Usage("--client must be one of " + Drivers.IDS + (client == null ? "" : "; got " + client));
        }
        switch (mode) {
            case "open" -> require(rate > 0 && duration > 0, "--mode open needs --rate and --duration");
            case "park" -> require(duration > 0 && parkUs >= 0, "--mode park needs --park-us and --duration");
            case "burst" -> require(requests > 0, "--mode burst needs --requests");
            default -> throw new Usage("--mode must be open, burst or park; got " + mode);
        }
        if (url == null) {
            throw new Usage("no URL");
        }
        URI uri;
        try {
            uri = URI.create(url);
        } catch (IllegalArgumentException e) {
            throw new Usage("not a URL: " + url);
        }
        require("http".equals(uri.getScheme()) && uri.getHost() != null, "the URL must be http://HOST[:PORT]/...; got " + url);
        return new LoadOptions(mode, client, uri, rate, warmupRate > 0 ? warmupRate : rate, duration, warmup,
                connections, ioThreads, timeout,
                maxInFlight, shipped, hlog, requests, parkUs, threadDump, timeline);
    }

    Pool pool() {
        return shipped ? Pool.SHIPPED
                : Pool.of(connections, ioThreads, Duration.ofNanos(Math.round(timeoutS * 1e9)));
    }

    private static void require(boolean ok, String message) throws Usage {
        if (!ok) {
            throw new Usage(message);
        }
    }

    private static double number(String option, String v, double min) throws Usage {
        try {
            double d = Double.parseDouble(v);
            if (d >= min && Double.isFinite(d)) {
                return d;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new Usage(option + " needs a number >= " + (long) min + "; got " + v);
    }

    private static double positive(String option, String v) throws Usage {
        double d;
        try {
            d = Double.parseDouble(v);
        } catch (NumberFormatException e) {
            d = Double.NaN;
        }
        require(d > 0 && Double.isFinite(d), option + " needs a number > 0; got " + v);
        return d;
    }

    private static long whole(String option, String v, long min) throws Usage {
        try {
            long n = Long.parseLong(v);
            if (n >= min && n <= Integer.MAX_VALUE) {
                return n;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new Usage(option + " needs a whole number >= " + min + "; got " + v);
    }
}
