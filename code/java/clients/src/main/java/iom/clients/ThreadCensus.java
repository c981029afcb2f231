package iom.clients;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;

/**
 * The JVM's threads during a run: the peak count, and at the largest count sampled, their names
 * grouped by prefix, so the book can say which threads each client starts; and, once, a dump of
 * what each thread is doing (its state, the CPU it has used and its stack), like jstack's.
 */
final class ThreadCensus {
    private final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    private int seen;
    private Map<String, Integer> groups = Map.of();

    ThreadCensus() {
        threads.resetPeakThreadCount();
    }

    synchronized void sample() {
        int n = threads.getThreadCount();
        if (n <= seen) {
            return;
        }
        Map<String, Integer> g = new TreeMap<>();
        for (ThreadInfo t : threads.getThreadInfo(threads.getAllThreadIds())) {
            if (t != null) { // null: ended since
                g.merge(prefix(t.getThreadName()), 1, Integer::sum);
            }
        }
        seen = n;
        groups = g;
    }

    synchronized int max() {
        return Math.max(threads.getPeakThreadCount(), seen);
    }

    synchronized Map<String, Integer> groups() {
        return groups;
    }

    /** Writes every live thread, with its stack (at most {@link #DEPTH} frames), to {@code file}. */
    void dump(String file, String header) {
        StringBuilder b = new StringBuilder(header).append('\n');
        ThreadInfo[] all = threads.dumpAllThreads(false, false, DEPTH);
        b.append(all.length).append(" threads\n");
        for (ThreadInfo t : all) {
            long cpu = threads.getThreadCpuTime(t.getThreadId()); // -1: ended since, or not measured
            b.append("\n\"").append(t.getThreadName()).append("\" #").append(t.getThreadId())
                    .append(t.isDaemon() ? " daemon " : " ").append(t.getThreadState())
                    .append(" cpu=").append(cpu < 0 ? "?" : String.format("%.1fms", cpu / 1e6));
            if (t.getLockName() != null) {
                b.append(" on ").append(t.getLockName());
            }
            b.append('\n');
            for (StackTraceElement e : t.getStackTrace()) {
                b.append("\tat ").append(e).append('\n');
            }
        }
        try {
            Files.writeString(Path.of(file), b, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static final int DEPTH = 24;

    /** A thread's name without its numbers: "HttpClient-3-Worker-0" is "HttpClient-#-Worker-#". */
    static String prefix(String name) {
        int url = name.indexOf("://"); // OkHttp names a thread after the call it runs
        String n = url < 0 ? name : name.substring(0, url);
        return n.replaceAll("@[0-9a-fA-F]+", "").replaceAll("\\d+", "#").strip();
    }
}
