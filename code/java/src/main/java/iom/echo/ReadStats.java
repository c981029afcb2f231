package iom.echo;

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;

/**
 * Every read event that reaches an echo server's pipeline, counted on the IO thread that read
 * it: how many events of each (chunk bytes, read buffer bytes), and the first 100,000 events
 * one by one (when, which connection, chunk, buffer) in arrays allocated up front. Nothing is
 * printed while the server runs; at SIGTERM {@link #save} writes two CSV files.
 */
final class ReadStats {
    static final int SERIES = 100_000;

    private final String framework;
    private final long start = System.nanoTime();
    private final ConcurrentHashMap<Long, LongAdder> counts = new ConcurrentHashMap<>();
    private final AtomicLong connections = new AtomicLong();
    private final AtomicInteger next = new AtomicInteger();
    /** Nanoseconds since start; -1 until the event's other fields are written (setRelease publishes them). */
    private final AtomicLongArray nanos = new AtomicLongArray(SERIES);
    private final long[] conns = new long[SERIES];
    private final int[] chunks = new int[SERIES];
    private final int[] buffers = new int[SERIES];

    /** {@code framework}, e.g. "mina-core 2.0.7", goes into the first line of the CSV. */
    ReadStats(String framework) {
        this.framework = framework;
        for (int i = 0; i < SERIES; i++) {
            nanos.set(i, -1);
        }
    }

    /** A new connection id, for frameworks without a numeric one of their own. */
    long newConnection() {
        return connections.incrementAndGet();
    }

    // BEGIN record
    /** One read event: {@code chunk} bytes arrived on {@code conn}, read into a buffer of {@code buffer} bytes. */
    void record(long conn, int chunk, int buffer) {
        counts.computeIfAbsent((long) chunk << 32 | buffer, k -> new LongAdder()).increment();
        if (next.get() < SERIES) { // once full, no more contention on next (and no overflow)
            int i = next.getAndIncrement();
            if (i < SERIES) {
                conns[i] = conn;
                chunks[i] = chunk;
                buffers[i] = buffer;
                nanos.setRelease(i, System.nanoTime() - start);
            }
        }
    }
    // END record

    /**
     * The shutdown hook's last step: FILE ({@code chunk_bytes,buffer_bytes,events}, sorted, after a
     * {@code # framework=...} line) and FILE.series.csv ({@code t_us,conn,chunk_bytes,buffer_bytes}),
     * each written to a temporary file and renamed. No file given: nothing. A failure exits 1.
     */
    void save(Path file) {
        if (file == null) {
            return;
        }
        Path series = file.resolveSibling(file.getFileName() + ".series.csv");
        try {
            writeAtomically(series, out -> {
                out.write("t_us,conn,chunk_bytes,buffer_bytes\n");
                for (int i = 0; i < Math.min(next.get(), SERIES); i++) {
                    long t = nanos.getAcquire(i);
                    if (t >= 0) { // else claimed by a read that the shutdown cut short
                        out.write(t / 1000 + "," + conns[i] + "," + chunks[i] + "," + buffers[i] + "\n");
                    }
                }
            });
            Map<Long, LongAdder> sorted = new TreeMap<>(counts); // by chunk, then buffer
            writeAtomically(file, out -> {
                out.write("# framework=" + framework + "\nchunk_bytes,buffer_bytes,events\n");
                for (Map.Entry<Long, LongAdder> e : sorted.entrySet()) {
                    out.write((e.getKey() >>> 32) + "," + (e.getKey() & 0xffffffffL) + "," + e.getValue().sum() + "\n");
                }
            });
        } catch (IOException e) {
            System.err.println("error: write " + file + ": " + e);
            System.err.flush();
            Runtime.getRuntime().halt(1); // in the shutdown hook: no exit(), and the harness must notice
        }
    }

    private interface Body {
        void write(BufferedWriter out) throws IOException;
    }

    private static void writeAtomically(Path file, Body body) throws IOException {
        Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
        try (BufferedWriter out = Files.newBufferedWriter(tmp)) {
            body.write(out);
        }
        Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    /**
     * "artifact version" of the jar that {@code anchor} was loaded from, read from the
     * pom.properties Maven puts in every jar it builds; "artifact ?" if that is not there.
     */
    static String version(Class<?> anchor, String group, String artifact) {
        String self = anchor.getName().replace('.', '/') + ".class";
        String url = String.valueOf(anchor.getClassLoader().getResource(self));
        String pom = "META-INF/maven/" + group + "/" + artifact + "/pom.properties";
        try (InputStream in = URI.create(url.substring(0, url.length() - self.length()) + pom).toURL().openStream()) {
            Properties p = new Properties();
            p.load(in);
            return artifact + " " + p.getProperty("version", "?");
        } catch (IOException | IllegalArgumentException e) {
            return artifact + " ?"; // not from a Maven jar: the statistics are still worth writing
        }
    }
}
