package iom.common;

import java.time.Duration;

/** The simulated work of one request: sleep --work-ms (blocking work), then spin --spin-us (CPU work). */
public final class Work {
    private Work() {}

    // BEGIN work
    public static void simulate(Options opts) throws InterruptedException {
        if (opts.workMs > 0) {
            Thread.sleep(Duration.ofNanos((long) (opts.workMs * 1e6)));
        }
        if (opts.spinUs > 0) {
            long end = System.nanoTime() + (long) (opts.spinUs * 1e3);
            while (System.nanoTime() < end) {
                // busy: the CPU is the work
            }
        }
    }
    // END work
}
