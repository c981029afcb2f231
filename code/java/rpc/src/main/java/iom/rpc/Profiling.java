package iom.rpc;

import java.util.concurrent.TimeUnit;
import one.profiler.AsyncProfiler;

/**
 * A flame graph of one window of a run (--profile FILE), from async-profiler's Java API, whose
 * jar bundles the native library: CPU samples every millisecond (perf events; the timer-based
 * itimer where perf events are not allowed), from --profile-delay-s after READY for
 * --profile-s, written as a self-contained HTML flame graph. Only a profiled run asks for it:
 * the measured runs never load the profiler.
 */
public final class Profiling {
    private Profiling() {}

    /** Starts the window's timer thread, if --profile was given. */
    public static void schedule(RpcOptions opts) {
        if (opts.profile.isEmpty()) {
            return;
        }
        Thread t = new Thread(() -> {
            try {
                TimeUnit.MILLISECONDS.sleep((long) (opts.profileDelayS * 1000));
                AsyncProfiler profiler = AsyncProfiler.getInstance();
                String event = start(profiler);
                TimeUnit.MILLISECONDS.sleep((long) (opts.profileS * 1000));
                profiler.execute("stop,file=" + opts.profile + ",title=" + opts.id + " (" + event + ")");
                System.err.println(opts.id + ": flame graph (" + event + ") written to " + opts.profile);
            } catch (Exception e) {
                System.err.println(opts.id + ": profiling failed: " + e);
            }
        }, "profile-window");
        t.setDaemon(true);
        t.start();
    }

    private static String start(AsyncProfiler profiler) throws java.io.IOException {
        try {
            profiler.execute("start,event=cpu,interval=1ms");
            return "cpu";
        } catch (IllegalStateException e) { // perf events not allowed here
            profiler.execute("start,event=itimer,interval=1ms");
            return "itimer";
        }
    }
}
