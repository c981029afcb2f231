package iom.common;

import java.io.IOException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * Doug Lea's Reactor ("Scalable IO in Java"): one thread, one Selector. It waits until some
 * channels are ready and dispatches each ready key to the Runnable attached to it (an
 * Acceptor or a {@link NioHandler}). Other threads never touch its channels: they hand it
 * tasks through {@link #execute}, which it runs between selects (worker pools give back
 * responses this way; an acceptor thread gives new connections to a sub-reactor this way).
 */
public final class Reactor implements Runnable {
    private final Selector selector;
    private final Queue<Runnable> tasks = new ConcurrentLinkedQueue<>();

    public Reactor() {
        try {
            selector = Selector.open();
        } catch (IOException e) {
            throw Server.halt("Selector.open", e);
        }
    }

    public Selector selector() {
        return selector;
    }

    /** Run task on this reactor's thread, soon: from any thread. */
    public void execute(Runnable task) {
        tasks.add(task);
        selector.wakeup();
    }

    // BEGIN event-loop
    @Override
    public void run() {
        try {
            while (!Thread.interrupted()) {
                selector.select(Reactor::dispatch); // wait, then run each ready key's handler
                for (Runnable task; (task = tasks.poll()) != null; ) {
                    task.run();
                }
            }
        } catch (IOException e) {
            throw Server.halt("select", e);
        }
    }

    private static void dispatch(SelectionKey key) {
        ((Runnable) key.attachment()).run();
    }
    // END event-loop
}
