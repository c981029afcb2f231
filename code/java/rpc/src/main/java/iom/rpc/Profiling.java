package iom.rpc;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import one.profiler.AsyncProfiler;

/**
 * A flame graph of one window of a run (--profile FILE), from async-profiler's Java API, whose
 * jar bundles the native library: CPU samples every millisecond (perf events; the timer-based
 * itimer where perf events are not allowed) for --profile-s seconds, written as a self-contained
 * HTML flame graph (FILE) and as folded stacks beside it (FILE without -flame.html, .collapsed:
 * one line per stack and its count, for a notebook to add up).
 *
 * The window opens when the file FILE.start appears: the harness creates it once the provider is
 * warm and its measured points are done, so that profiling never touches a measured number.
 * Until then a daemon thread looks for that file twice a second, and the profiler is not loaded.
 */
public final class Profiling {
    private Profiling() {}

    /** Starts the thread that waits for the window, if --profile was given. */
    public static void schedule(RpcOptions opts) {
        if (opts.profile.isEmpty()) {
            return;
        }
        Path trigger = Path.of(opts.profile + ".start");
        Thread t = new Thread(() -> {
            try {
                while (!Files.exists(trigger)) {
                    TimeUnit.MILLISECONDS.sleep(500);
                }
                AsyncProfiler profiler = AsyncProfiler.getInstance();
                String event = start(profiler);
                TimeUnit.MILLISECONDS.sleep((long) (opts.profileS * 1000));
                String folded = opts.profile.replaceFirst("(-flame)?\\.html$", "") + ".collapsed";
                profiler.execute("dump,collapsed,file=" + folded);
                profiler.execute("stop,file=" + opts.profile + ",title=" + opts.id + " (" + event + ")");
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
