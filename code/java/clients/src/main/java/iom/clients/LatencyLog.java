package iom.clients;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramLogWriter;
import org.HdrHistogram.Recorder;

/**
 * Latencies in microseconds, 3 significant digits, up to an hour: recorded from any thread into
 * an HdrHistogram {@link Recorder}, taken out once a second ({@link #interval}), summed, and
 * written as an interval log (.hlog) when a file is given, as wrk2 and HdrHistogram's own tools do.
 */
final class LatencyLog {
    static final long HIGHEST_US = 3_600_000_000L;
    static final int DIGITS = 3;

    private final Recorder recorder = new Recorder(1, HIGHEST_US, DIGITS);
    private final Histogram total = new Histogram(1, HIGHEST_US, DIGITS);
    private final HistogramLogWriter log;
    private final long baseMs;
    private Histogram recycled;

    /** A log whose times count from {@code baseMs} (epoch ms); {@code file} may be null: no log. */
    LatencyLog(String file, long baseMs, String comment) throws IOException {
        this.baseMs = baseMs;
        if (file == null) {
            log = null;
            return;
        }
        log = new HistogramLogWriter(new PrintStream(new FileOutputStream(file), false, "US-ASCII"));
        log.outputLogFormatVersion();
        log.outputComment(comment);
        log.outputStartTime(baseMs);
        log.setBaseTime(baseMs);
        log.outputLegend();
    }

    static long us(long nanos) {
        return Math.min(HIGHEST_US, Math.max(0, nanos / 1000));
    }

    /** From any thread. */
    void record(long nanos) {
        recorder.recordValue(us(nanos));
    }

    /** Empties the recorder: the next interval starts now. */
    void restart() {
        recorder.getIntervalHistogram();
    }

    /** Takes the interval recorded since the last call into the total and the log; one thread at a time. */
    synchronized void interval() {
        Histogram h = recorder.getIntervalHistogram(recycled);
        total.add(h);
        if (log != null) { // the max column in milliseconds
            log.outputIntervalHistogram((h.getStartTimeStamp() - baseMs) / 1000.0,
                    (h.getEndTimeStamp() - baseMs) / 1000.0, h, 1000.0);
        }
        recycled = h;
    }

    /** The last interval, then the file closed; returns every interval's sum. */
    synchronized Histogram close() {
        interval();
        if (log != null) {
            log.close();
        }
        return total;
    }
}
