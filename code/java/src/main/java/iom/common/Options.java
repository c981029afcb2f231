package iom.common;

import java.util.Locale;

/**
 * The server contract's flags, the same in every language of the book:
 * {@code --port N} (0, the default, picks a free port), {@code --host ADDR} (127.0.0.1),
 * {@code --work-ms MS} (sleep per request), {@code --spin-us US} (busy CPU per request),
 * {@code --pool N} (0: the model's default), {@code --backlog N} (4096) and
 * {@code --idle-timeout-s S} (2): the blocking models drop a connection silent S seconds,
 * 0 = never; the reactors, NIO.2, Netty and Mina never drop an idle connection and ignore it.
 * A bad flag prints the usage and exits 1, as the C servers' parse_options does.
 */
public final class Options {
    public String host = "127.0.0.1";
    public int port = 0;
    public double workMs = 0;
    public double spinUs = 0;
    public int pool = 0;
    public int backlog = 4096;
    /** Blocking servers drop a connection that stays silent this long (the C servers' 2 s); 0 = never. */
    public int idleTimeoutMs = 2000;

    /** The pool size: --pool if given, else the model's default. */
    public int pool(int modelDefault) {
        return pool > 0 ? pool : modelDefault;
    }

    /** Parse the contract's flags; {@code id} names the server in messages. */
    public static Options parse(String id, String[] args) {
        Options o = new Options();
        for (int i = 0; i < args.length; i++) {
            String flag = args[i];
            if (flag.equals("--help") || flag.equals("-h")) {
                usage(id);
            }
            if (i + 1 >= args.length) {
                usage(id);
            }
            String value = args[++i];
            switch (flag) {
                case "--port" -> o.port = (int) number(id, flag, value, 65535);
                case "--host" -> o.host = value;
                case "--work-ms" -> o.workMs = number(id, flag, value, 60000);
                case "--spin-us" -> o.spinUs = number(id, flag, value, 60e6);
                case "--pool" -> o.pool = (int) number(id, flag, value, 100000);
                case "--backlog" -> o.backlog = (int) number(id, flag, value, 1 << 20);
                case "--idle-timeout-s" -> o.idleTimeoutMs = (int) Math.ceil(1000 * number(id, flag, value, 1e6));
                default -> usage(id);
            }
        }
        return o;
    }

    private static double number(String id, String flag, String s, double max) {
        double v;
        try {
            v = Double.parseDouble(s);
        } catch (NumberFormatException e) {
            v = Double.NaN;
        }
        if (!(v >= 0 && v <= max) || s.isBlank() || Character.isLetter(s.charAt(s.length() - 1))) {
            System.err.printf(Locale.ROOT, "%s: %s wants a number from 0 to %s, not '%s'%n",
                    id, flag, max == (long) max ? Long.toString((long) max) : Double.toString(max), s);
            System.exit(1);
        }
        return v;
    }

    private static void usage(String id) {
        System.err.println("usage: " + id + " [--port N] [--host ADDR] [--work-ms MS] [--spin-us US]"
                + " [--pool N] [--backlog N] [--idle-timeout-s S]\n"
                + "  --port 0 (default) picks a free port; prints READY port=N once listening\n"
                + "  --idle-timeout-s S: the blocking models drop a connection silent S seconds (default 2;\n"
                + "    0 = never); the reactors, NIO.2, Netty and Mina never drop one and ignore it");
        System.exit(1);
    }
}
