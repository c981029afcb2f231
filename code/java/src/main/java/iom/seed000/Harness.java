/*
 * The minimum added to the source write-up's three servers (seed 000) so that the book's
 * harness can drive them, and nothing else: --port N (0 picks a free port; the write-up
 * hard-codes 9001, 9003 and 9005), --work-ms MS (the write-up's Thread.sleep(20); default 20),
 * the READY port=N line once listening, and exit status 0 on SIGTERM (the JVM's own is 143).
 *
 * Chapter: book/java/reproduce-000.md
 */
package iom.seed000;

import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.time.Duration;

final class Harness {
    private Harness() {}

    static int port = 0;
    /** The book's servers bind loopback only; the write-up's bound every interface. */
    static final java.net.InetAddress LOOPBACK = java.net.InetAddress.getLoopbackAddress();
    static Duration work = Duration.ofMillis(20);

    static void parse(String[] args) {
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--port" -> port = Integer.parseInt(args[i + 1]);
                case "--work-ms" -> work = Duration.ofNanos((long) (Double.parseDouble(args[i + 1]) * 1e6));
                default -> usage();
            }
        }
        if (args.length % 2 != 0) {
            usage();
        }
        Runtime.getRuntime().addShutdownHook(new Thread(() -> Runtime.getRuntime().halt(0)));
    }

    static void ready(SocketAddress address) {
        System.out.println("READY port=" + ((InetSocketAddress) address).getPort());
        System.out.flush();
    }

    private static void usage() {
        System.err.println("usage: [--port N] [--work-ms MS]   (the source write-up's server, as published)");
        System.exit(1);
    }
}
