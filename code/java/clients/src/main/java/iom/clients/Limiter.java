package iom.clients;

import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;

/**
 * At most {@code permits} holders at a time, without blocking a thread: {@link #acquire} completes
 * when a permit is free, in arrival order. A waiter that gave up (its future completed otherwise,
 * by a timeout) is skipped, and its permit goes to the next one.
 */
final class Limiter {
    private final ArrayDeque<CompletableFuture<Void>> waiting = new ArrayDeque<>();
    private int free;

    Limiter(int permits) {
        free = permits;
    }

    synchronized CompletableFuture<Void> acquire() {
        if (free > 0) {
            free--;
            return CompletableFuture.completedFuture(null);
        }
        CompletableFuture<Void> turn = new CompletableFuture<>();
        waiting.add(turn);
        return turn;
    }

    void release() {
        while (true) {
            CompletableFuture<Void> next;
            synchronized (this) {
                next = waiting.poll();
                if (next == null) {
                    free++;
                    return;
                }
            }
            if (next.complete(null)) { // outside the lock: the waiter's next step runs here
                return;
            }
        }
    }

    synchronized int free() {
        return free;
    }
}
