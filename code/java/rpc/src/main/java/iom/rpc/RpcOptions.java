package iom.rpc;

import iom.common.Options;
import java.util.ArrayList;
import java.util.List;

/**
 * The flags of an RPC provider: the server contract's (iom.common.Options: --port, --host,
 * --work-ms, --spin-us, --pool, --backlog, --idle-timeout-s) and these:
 * <ul>
 * <li>{@code --keep-alive-requests N}: close a connection after N requests (0: never); absent,
 * each framework's shipped default (Tomcat 100; Reactor Netty and plain Netty never);</li>
 * <li>{@code --transport http|frame} and {@code --codec json|binary} (plain Netty only);</li>
 * <li>{@code --provider URL}, {@code --timeout-ms MS}, {@code --retries N} (the consumer only);</li>
 * <li>{@code --profile FILE}: write a flame graph (async-profiler, cpu samples) of a window of
 * {@code --profile-s S} seconds that opens when FILE.start appears (iom.rpc.Profiling).</li>
 * </ul>
 * A bad value prints the usage and exits 1, like the contract's flags.
 */
public final class RpcOptions {
    public final String id;
    public Options contract;
    /** -1: the framework's own default. */
    public int keepAliveRequests = -1;
    public String transport = "http";
    public Codec codec = Codec.JSON;
    public String provider = "";
    public int timeoutMs = 200;
    public int retries = 2;
    public String profile = "";
    public double profileS = 10;

    private RpcOptions(String id) {
        this.id = id;
    }

    public static RpcOptions parse(String id, String[] args) {
        RpcOptions o = new RpcOptions(id);
        List<String> rest = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            String flag = args[i];
            String value = i + 1 < args.length ? args[i + 1] : null;
            switch (flag) {
                case "--keep-alive-requests" -> o.keepAliveRequests = o.integer(flag, value);
                case "--transport" -> o.transport = o.oneOf(flag, value, "http", "frame");
                case "--codec" -> o.codec = Codec.named(o.oneOf(flag, value, "json", "binary"));
                case "--provider" -> o.provider = o.given(flag, value);
                case "--timeout-ms" -> o.timeoutMs = o.integer(flag, value);
                case "--retries" -> o.retries = o.integer(flag, value);
                case "--profile" -> o.profile = o.given(flag, value);
                case "--profile-s" -> o.profileS = o.seconds(flag, value);
                default -> {
                    rest.add(flag);
                    continue;
                }
            }
            i++;
        }
        o.contract = Options.parse(id, rest.toArray(String[]::new));
        return o;
    }

    private String given(String flag, String value) {
        if (value == null || value.isBlank()) {
            usage(flag + " wants a value");
        }
        return value;
    }

    private String oneOf(String flag, String value, String... allowed) {
        for (String a : allowed) {
            if (a.equals(value)) {
                return a;
            }
        }
        usage(flag + " wants one of " + String.join(", ", allowed) + ", not '" + value + "'");
        return null;
    }

    private int integer(String flag, String value) {
        try {
            int v = Integer.parseInt(given(flag, value));
            if (v >= 0) {
                return v;
            }
        } catch (NumberFormatException e) {
            // below
        }
        usage(flag + " wants a whole number from 0, not '" + value + "'");
        return 0;
    }

    private double seconds(String flag, String value) {
        try {
            double v = Double.parseDouble(given(flag, value));
            if (v >= 0 && v <= 86400) {
                return v;
            }
        } catch (NumberFormatException e) {
            // below
        }
        usage(flag + " wants seconds from 0 to 86400, not '" + value + "'");
        return 0;
    }

    private void usage(String why) {
        System.err.println(id + ": " + why);
        System.err.println("usage: " + id + " [contract flags: --port N --host ADDR --work-ms MS --spin-us US --pool N]"
                + " [--keep-alive-requests N] [--transport http|frame] [--codec json|binary]"
                + " [--provider URL --timeout-ms MS --retries N] [--profile FILE --profile-s S]");
        System.exit(1);
    }
}
