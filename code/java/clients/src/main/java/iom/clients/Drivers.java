package iom.clients;

import java.util.List;

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
}
