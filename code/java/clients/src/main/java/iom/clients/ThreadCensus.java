package iom.clients;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.util.Map;
import java.util.TreeMap;

/**
 * The JVM's threads during a run: the peak count, and at the largest count sampled, their names
 * grouped by prefix, so the book can say which threads each client starts.
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

    /** A thread's name without its numbers: "HttpClient-3-Worker-0" is "HttpClient-#-Worker-#". */
    static String prefix(String name) {
        int url = name.indexOf("://"); // OkHttp names a thread after the call it runs
        String n = url < 0 ? name : name.substring(0, url);
        return n.replaceAll("@[0-9a-fA-F]+", "").replaceAll("\\d+", "#").strip();
    }
}
