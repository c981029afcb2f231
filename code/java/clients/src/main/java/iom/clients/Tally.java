package iom.clients;

import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/**
 * The requests of one phase (warm-up or measured), by how each ended. Every offered request ends
 * exactly once: dropped (never sent) or one {@link Outcome}; {@link #check} says so.
 */
final class Tally {
    final LongAdder offered = new LongAdder();
    final LongAdder sent = new LongAdder();
    final LongAdder dropped = new LongAdder();
    private final Map<Outcome, LongAdder> ended = new EnumMap<>(Outcome.class);

    Tally() {
        for (Outcome o : Outcome.values()) {
            ended.put(o, new LongAdder());
        }
    }

    void add(Outcome o) {
        ended.get(o).increment();
    }

    long get(Outcome o) {
        return ended.get(o).sum();
    }

    long failed() {
        return get(Outcome.NON_2XX) + get(Outcome.TIMEOUT) + get(Outcome.REJECTED) + get(Outcome.ERROR);
    }

    /** Throws unless ok + non2xx + timeouts + rejected + errors + dropped == offered == sent + dropped. */
    void check(String phase) {
        long endedSum = get(Outcome.OK) + failed();
        if (endedSum + dropped.sum() != offered.sum() || sent.sum() + dropped.sum() != offered.sum()) {
            throw new IllegalStateException(phase + ": offered " + offered.sum() + " but sent " + sent.sum()
                    + ", dropped " + dropped.sum() + ", ended " + endedSum + " " + ended);
        }
    }
}
