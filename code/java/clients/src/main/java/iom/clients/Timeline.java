package iom.clients;

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Supplier;

/**
 * A run, every 100 ms: one JSON line with what the driver had sent and what had ended, what was
 * in flight, the connections opened (the kernel's count, {@link #activeOpens}), the CPU each group of threads had used (named as {@link ThreadCensus#prefix} groups
 * them; {@code jvm} is the rest of the process: the collector's and the compiler's threads, which
 * are not Java threads), the collector's pauses so far, the heap in use, and the pool's own account
 * where the driver gives one ({@link Driver#pool}). Counts and times are cumulative from the first
 * line, so the reader takes differences: what each thread did in each tenth of a second is what
 * separates a client waiting on its pool from one waiting on its IO thread or on its collector.
 * Each thread that used a tenth of the interval or more since the last line has its stack sampled
 * ({@code busy}: thread name to its frames): what the busy threads were doing, ten times a second.
 */
final class Timeline implements AutoCloseable {
    private final BufferedWriter out;
    private final long t0;
    private final Supplier<Map<String, Long>> counts;
    private final Driver driver;
    private final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    private final MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
    private final List<GarbageCollectorMXBean> pauses = ManagementFactory.getGarbageCollectorMXBeans().stream()
            .filter(b -> !b.getName().contains("Concurrent")) // G1's and ZGC's concurrent cycles do not stop the program
            .toList();
    private final com.sun.management.OperatingSystemMXBean os =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    /** CPU of threads that have ended, by group: a group's CPU never goes down when a thread ends. */
    private final Map<Long, String> groupOf = new java.util.HashMap<>();
    private final Map<Long, Long> lastCpu = new java.util.HashMap<>();
    private final Map<String, Long> endedCpu = new TreeMap<>();

    private final long opensAtStart = activeOpens();

    /** Writes to {@code file}; t_ms counts from {@code t0} (System.nanoTime); {@code counts} gives sent, ended and so on. */
    Timeline(String file, long t0, Supplier<Map<String, Long>> counts, Driver driver) throws IOException {
        this.out = Files.newBufferedWriter(Path.of(file), StandardCharsets.UTF_8);
        this.t0 = t0;
        this.counts = counts;
        this.driver = driver;
    }

    /**
     * The kernel's count of TCP connections this network namespace has opened (ActiveOpens in
     * /proc/net/snmp, one per connect), or -1 where it cannot be read: with one client on the
     * machine, the connections that client has opened.
     */
    static long activeOpens() {
        try {
            List<String> tcp = Files.readAllLines(Path.of("/proc/net/snmp")).stream()
                    .filter(l -> l.startsWith("Tcp:")).toList();
            List<String> names = List.of(tcp.get(0).split(" ")), values = List.of(tcp.get(1).split(" "));
            return Long.parseLong(values.get(names.indexOf("ActiveOpens")));
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    synchronized void sample() {
        Map<String, Object> line = new LinkedHashMap<>();
        line.put("t_ms", (System.nanoTime() - t0) / 1_000_000);
        line.putAll(counts.get());
        long opens = activeOpens();
        if (opens >= 0 && opensAtStart >= 0) {
            line.put("opened", opens - opensAtStart); // connections opened since the timeline began
        }
        Map<String, Long> cpu = new TreeMap<>(endedCpu);
        Map<Long, Long> seen = new java.util.HashMap<>();
        long javaCpu = 0;
        Map<String, String> busy = new TreeMap<>();
        for (ThreadInfo t : threads.getThreadInfo(threads.getAllThreadIds())) {
            if (t == null) {
                continue;
            }
            long ns = threads.getThreadCpuTime(t.getThreadId());
            if (ns < 0) {
                continue;
            }
            if (ns - lastCpu.getOrDefault(t.getThreadId(), ns) >= BUSY_NS && t.getThreadId() != Thread.currentThread().threadId()) {
                busy.put(t.getThreadName(), stack(t.getThreadId()));
            }
            String g = ThreadCensus.prefix(t.getThreadName());
            groupOf.put(t.getThreadId(), g);
            seen.put(t.getThreadId(), ns);
            cpu.merge(g, ns / 1_000_000, Long::sum);
        }
        for (Map.Entry<Long, Long> e : lastCpu.entrySet()) { // threads ended since the last line: their last reading
            if (!seen.containsKey(e.getKey())) {
                String g = groupOf.remove(e.getKey());
                endedCpu.merge(g, e.getValue() / 1_000_000, Long::sum);
                cpu.merge(g, e.getValue() / 1_000_000, Long::sum);
            }
        }
        lastCpu.clear();
        lastCpu.putAll(seen);
        for (long ms : cpu.values()) {
            javaCpu += ms;
        }
        long process = os.getProcessCpuTime() / 1_000_000;
        cpu.put("jvm", Math.max(0, process - javaCpu));
        line.put("cpu_ms", cpu);
        if (!busy.isEmpty()) {
            line.put("busy", busy);
        }
        long gcMs = 0, gcCount = 0;
        for (GarbageCollectorMXBean b : pauses) {
            gcMs += Math.max(0, b.getCollectionTime());
            gcCount += Math.max(0, b.getCollectionCount());
        }
        line.put("gc_ms", gcMs);
        line.put("gc_count", gcCount);
        line.put("heap_used_mib", memory.getHeapMemoryUsage().getUsed() >> 20);
        Map<String, Long> pool = driver.pool();
        if (!pool.isEmpty()) {
            line.put("pool", pool);
        }
        try {
            out.write(JsonLine.of(line));
            out.newLine();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A thread that used this much CPU since the last line (a tenth of the interval) is busy: its stack is kept. */
    static final long BUSY_NS = 10_000_000L;

    /**
     * Where a thread is now: its stack, innermost first, as "Class.method" (the class's simple name)
     * joined by " < ", at most {@link ThreadCensus#DEPTH} frames: one sample per busy thread per line,
     * which a reader counts to see what a thread spent a stretch of the run on.
     */
    private String stack(long id) {
        ThreadInfo t = threads.getThreadInfo(id, ThreadCensus.DEPTH);
        if (t == null) {
            return "";
        }
        StringBuilder b = new StringBuilder();
        for (StackTraceElement e : t.getStackTrace()) {
            String c = e.getClassName();
            b.append(b.isEmpty() ? "" : " < ").append(c.substring(c.lastIndexOf('.') + 1)).append('.')
                    .append(e.getMethodName());
        }
        return b.toString();
    }

    @Override
    public synchronized void close() throws IOException {
        out.close();
    }
}
