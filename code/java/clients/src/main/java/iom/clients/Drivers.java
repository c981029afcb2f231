package iom.clients;

import java.io.IOException;
import java.io.InputStream;
import java.util.List;
import java.util.Properties;
import java.util.function.Supplier;
import org.apache.hc.client5.http.impl.async.HttpAsyncClients;
import org.asynchttpclient.AsyncHttpClient;
import org.eclipse.jetty.client.HttpClient;

/** The five clients of source write-up 003, by id: each one's driver, and where its version is found. */
public final class Drivers {
    /** Opens a driver with a pool: its constructor. */
    @FunctionalInterface
    private interface Opener {
        Driver open(Pool pool) throws Exception;
    }

    /** One client: its id, its driver, and its library's version, as found at run time. */
    private record Client(String id, Class<? extends Driver> driver, Opener opener, Supplier<String> version) {}

    private static final List<Client> CLIENTS = List.of(
            new Client("ahc", AhcDriver.class, AhcDriver::new,
                    () -> pomVersion(AsyncHttpClient.class, "org.asynchttpclient", "async-http-client")),
            new Client("apache-hc5", ApacheDriver.class, ApacheDriver::new,
                    () -> pomVersion(HttpAsyncClients.class, "org.apache.httpcomponents.client5", "httpclient5")),
            new Client("jdk", JdkDriver.class, JdkDriver::new, () -> Runtime.version().toString()),
            new Client("jetty", JettyDriver.class, JettyDriver::new,
                    () -> pomVersion(HttpClient.class, "org.eclipse.jetty", "jetty-client")),
            new Client("okhttp", OkHttpDriver.class, OkHttpDriver::new, Drivers::okHttpVersion));

    public static final List<String> IDS = CLIENTS.stream().map(Client::id).toList();

    private Drivers() {}

    /** Opens client {@code id} with {@code pool} (or as shipped: {@link Pool#SHIPPED}). */
    public static Driver open(String id, Pool pool) throws Exception {
        for (Client c : CLIENTS) {
            if (c.id().equals(id)) {
                return c.opener().open(pool);
            }
        }
        throw new IllegalArgumentException("unknown client " + id + "; known: " + IDS);
    }

    /** The id of {@code d}, one of the five drivers: {@link Driver#id}. */
    static String id(Driver d) {
        return client(d).id();
    }

    /** The version of {@code d}'s library: {@link Driver#version}. */
    static String version(Driver d) {
        return client(d).version().get();
    }

    private static Client client(Driver d) {
        for (Client c : CLIENTS) {
            if (c.driver() == d.getClass()) {
                return c;
            }
        }
        throw new IllegalStateException(d.getClass().getName() + " is none of " + IDS
                + ": a driver of another class names its own id and version");
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

    /** OkHttp's jar (built by Gradle) has no pom.properties; its VERSION field, read at run time. */
    private static String okHttpVersion() {
        try {
            return String.valueOf(Class.forName("okhttp3.OkHttp").getField("VERSION").get(null));
        } catch (ReflectiveOperationException e) {
            return "unknown";
        }
    }
}
