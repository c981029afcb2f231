package iom.clients;

import java.io.IOException;
import java.io.InputStream;
import java.util.List;
import java.util.Properties;

/** The five clients of source write-up 003, by id. */
public final class Drivers {
    public static final List<String> IDS = List.of("ahc", "apache-hc5", "jdk", "jetty", "okhttp");

    private Drivers() {}

    /** Opens client {@code id} with {@code pool} (or as shipped: {@link Pool#SHIPPED}). */
    public static Driver open(String id, Pool pool) throws Exception {
        return switch (id) {
            case "ahc" -> new AhcDriver(pool);
            case "apache-hc5" -> new ApacheDriver(pool);
            case "jdk" -> new JdkDriver(pool);
            case "jetty" -> new JettyDriver(pool);
            case "okhttp" -> new OkHttpDriver(pool);
            default -> throw new IllegalArgumentException("unknown client " + id + "; known: " + IDS);
        };
    }

    /** Closes {@code d} (when not null), waiting at most {@code ms}: a client that hangs on close must not hang a run. */
    static void close(Driver d, long ms) {
        if (d == null) {
            return;
        }
        Thread closer = Thread.ofPlatform().daemon().name("close-" + d.id()).start(() -> {
            try {
                d.close();
            } catch (IOException e) {
                System.err.println("closing " + d.id() + ": " + e);
            }
        });
        try {
            closer.join(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** The version in a Maven-built jar's META-INF/maven/GROUP/ARTIFACT/pom.properties, or "unknown". */
    static String pomVersion(Class<?> inJar, String group, String artifact) {
        String name = "/META-INF/maven/" + group + "/" + artifact + "/pom.properties";
        try (InputStream in = inJar.getResourceAsStream(name)) {
            if (in == null) {
                return "unknown";
            }
            Properties p = new Properties();
            p.load(in);
            return p.getProperty("version", "unknown");
        } catch (IOException e) {
            return "unknown";
        }
    }
}
