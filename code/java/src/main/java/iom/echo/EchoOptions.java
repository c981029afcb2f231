package iom.echo;

import iom.common.Server;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/**
 * The flags of the echo servers, set up like the 2013 Mina vs Netty benchmark:
 * {@code --port N} (0, the default, picks a free port), {@code --host ADDR} (127.0.0.1),
 * {@code --io-threads N} and {@code --executor-threads N} (both default to the number of
 * cores), {@code --nodelay true|false|default} (default: the framework's own setting) and
 * {@code --stats FILE} (the read statistics, written at SIGTERM). Mina only:
 * {@code --read-buffer N}, {@code --min-read-buffer N}, {@code --max-read-buffer N}
 * (unset: Mina's 2048, 64 and 65536) and {@code --allocator heap|direct|cached} (heap).
 * A bad flag prints the usage and exits 1, as {@link iom.common.Options} does.
 */
final class EchoOptions {
    String host = "127.0.0.1";
    int port = 0;
    int ioThreads = Runtime.getRuntime().availableProcessors();
    int executorThreads = Runtime.getRuntime().availableProcessors();
    /** TCP_NODELAY on accepted sockets; null leaves the framework's default. */
    Boolean noDelay;
    /** Where to write the read statistics at SIGTERM; null: nowhere. */
    Path stats;
    /** Mina's read buffer sizes; 0 leaves Mina's default. */
    int readBuffer, minReadBuffer, maxReadBuffer;
    String allocator = "heap";

    /** Parse the flags; {@code id} names the server in messages; {@code mina} admits Mina's own flags. */
    static EchoOptions parse(String id, boolean mina, String[] args) {
        EchoOptions o = new EchoOptions();
        for (int i = 0; i < args.length; i++) {
            String flag = args[i];
            if (i + 1 >= args.length || flag.equals("--help") || flag.equals("-h")) {
                usage(id, mina);
            }
            String value = args[++i];
            boolean minaFlag = flag.endsWith("read-buffer") || flag.equals("--allocator");
            if (minaFlag && !mina) {
                usage(id, false);
            }
            switch (flag) {
                case "--port" -> o.port = number(id, flag, value, 0, 65535);
                case "--host" -> o.host = value;
                case "--io-threads" -> o.ioThreads = number(id, flag, value, 1, 4096);
                case "--executor-threads" -> o.executorThreads = number(id, flag, value, 1, 4096);
                case "--nodelay" -> o.noDelay = switch (value) {
                    case "true" -> Boolean.TRUE;
                    case "false" -> Boolean.FALSE;
                    case "default" -> null;
                    default -> bad(id, flag, "true, false or default", value);
                };
                case "--stats" -> o.stats = statsFile(id, flag, value);
                case "--read-buffer" -> o.readBuffer = number(id, flag, value, 1, 1 << 30);
                case "--min-read-buffer" -> o.minReadBuffer = number(id, flag, value, 1, 1 << 30);
                case "--max-read-buffer" -> o.maxReadBuffer = number(id, flag, value, 1, 1 << 30);
                case "--allocator" -> o.allocator = switch (value) {
                    case "heap", "direct", "cached" -> value;
                    default -> bad(id, flag, "heap, direct or cached", value);
                };
                default -> usage(id, mina);
            }
        }
        return o;
    }

    /** The address to bind: --host, which must be an IP address, and --port. */
    InetSocketAddress address() {
        return Server.address(host, port);
    }

    private static int number(String id, String flag, String s, int min, int max) {
        try {
            int v = Integer.parseInt(s);
            if (v >= min && v <= max) {
                return v;
            }
        } catch (NumberFormatException e) {
            // reported below, like a number out of range
        }
        return bad(id, flag, "a whole number from " + min + " to " + max, s);
    }

    /** Checked now rather than at SIGTERM, when it would be too late to say. */
    private static Path statsFile(String id, String flag, String value) {
        Path file = Path.of(value).toAbsolutePath();
        if (value.isBlank() || Files.isDirectory(file) || !Files.isWritable(file.getParent())) {
            return bad(id, flag, "a file in a writable directory", value);
        }
        return file;
    }

    private static <T> T bad(String id, String flag, String wanted, String value) {
        System.err.printf(Locale.ROOT, "%s: %s wants %s, not '%s'%n", id, flag, wanted, value);
        System.exit(1);
        throw new IllegalStateException("unreachable");
    }

    private static void usage(String id, boolean mina) {
        System.err.println("usage: " + id + " [--port N] [--host ADDR] [--io-threads N] [--executor-threads N]"
                + " [--nodelay true|false|default] [--stats FILE]"
                + (mina ? " [--read-buffer N] [--min-read-buffer N] [--max-read-buffer N]"
                        + " [--allocator heap|direct|cached]" : "") + "\n"
                + "  --port 0 (default) picks a free port; prints READY port=N once listening");
        System.exit(1);
    }
}
