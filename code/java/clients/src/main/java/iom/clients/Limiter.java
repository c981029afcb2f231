package iom.clients;

import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * At most {@code connections} requests of a {@link Pool} at a time, without blocking a thread,
 * each bounded by the pool's timeout ({@link Pool#bound}): the pool of the two clients whose own
 * cap on connections cannot queue requests (the JDK's has no cap; AHC's cap makes a request wait
 * for a connection to close, not for one to come back to the pool). A request waits its turn in
 * arrival order; one that gave up (its future failed first, by a timeout) is skipped, and its
 * permit goes to the next one. As shipped ({@link Pool#SHIPPED}), neither limit nor timeout.
 */
final class Limiter {
    private final Pool pool;
    private final ArrayDeque<CompletableFuture<Void>> waiting = new ArrayDeque<>();
    private int free;

    Limiter(Pool pool) {
        this.pool = pool;
        free = pool.connections();
    }

    /**
     * Starts a request once a permit is free (at once as shipped); the permit is freed when that
     * request ends. The returned future completes as the request does, or fails once the pool's
     * timeout has passed. If it fails first, a request still waiting gives up its turn, and a
     * started one is cancelled with {@code cancel(true)}, which the caller's {@code start} must
     * make abort it.
     */
    <T> CompletableFuture<T> submit(Supplier<? extends CompletableFuture<T>> start) {
        return pool.shipped() ? start.get() : pool.bound(queued(start));
    }

    private <T> CompletableFuture<T> queued(Supplier<? extends CompletableFuture<T>> start) {
        CompletableFuture<T> done = new CompletableFuture<>();
        CompletableFuture<Void> turn = acquire();
        turn.thenRun(() -> {
            if (done.isDone()) { // gave up between the permit's release and now
                release();
                return;
            }
            CompletableFuture<T> request = start.get();
            request.whenComplete((r, e) -> {
                release();
                if (e == null) {
                    done.complete(r);
                } else {
                    done.completeExceptionally(e);
                }
            });
            done.whenComplete((r, e) -> request.cancel(true)); // no-op once the request ended
        });
        done.whenComplete((r, e) -> turn.cancel(false)); // no-op once the turn came
        return done;
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
