// How Mina, Netty 3 and Netty 4 size the buffer for each read: their own sizing code, driven
// by a model of their read loops. For the chapter book/java/mina-netty.md.
//
// In a Java page:   %load ../../code/java/tools/ReadSizing.java
//                   ReadSizing.mina(5120, ReadSizing.arrivals(12, 6, 1448));
//
// The decisions come from the frameworks' classes on the classpath:
//   Mina 2.2      AbstractIoSession.increaseReadBufferSize / decreaseReadBufferSize (a DummySession),
//   Netty 3.6     AdaptiveReceiveBufferSizePredictor,
//   Netty 4.2     AdaptiveRecvByteBufAllocator's handle.
// What is modelled here (and said so in the chapter) is only the loop around them, as each
// framework's read method runs it: how many bytes one read can take, and when the loop stops.
// A message "arrives" either whole or in two parts, the first of which a read sees alone
// (as when the selector wakes up after the first segment of a message).
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.AdaptiveRecvByteBufAllocator;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.channel.embedded.EmbeddedChannel;
import java.util.ArrayList;
import java.util.List;
import org.apache.mina.core.session.DummySession;
import org.jboss.netty.channel.AdaptiveReceiveBufferSizePredictor;

public final class ReadSizing {
    private ReadSizing() {}

    /** The bytes a reader finds for message i: {S} when it arrived whole, {first, S - first} when split. */
    public static List<int[]> arrivals(int messages, int splitMessage, int first) {
        List<int[]> out = new ArrayList<>();
        for (int i = 0; i < messages; i++) {
            out.add(i == splitMessage ? new int[] {first, -1} : new int[] {-1});
        }
        return out;
    }

    private static int[] parts(int[] pattern, int size) {
        return pattern.length == 1 ? new int[] {size} : new int[] {pattern[0], size - pattern[0]};
    }

    /** Mina 2.0.7 to 2.2.x: a new buffer of readBufferSize per read event, filled until full or
     *  empty; then double the size if the read filled it, halve it if it used less than half.
     *  Prints one line per message; returns the number of read events each message took. */
    public static int[] mina(int size, List<int[]> arrivals) {
        return mina(size, arrivals, true);
    }

    public static int[] mina(int size, List<int[]> arrivals, boolean print) {
        DummySession session = new DummySession();
        int[] events = new int[arrivals.size()];
        if (print) {
            System.out.println("Mina: message -> read events (bytes read / buffer size) -> buffer size after");
        }
        for (int m = 0; m < arrivals.size(); m++) {
            StringBuilder line = new StringBuilder();
            for (int part : parts(arrivals.get(m), size)) {
                int left = part;
                while (left > 0) {  // one read event per pass: the selector fires again while bytes remain
                    int capacity = session.getConfig().getReadBufferSize();
                    int read = Math.min(left, capacity);
                    left -= read;
                    events[m]++;
                    line.append(String.format("%5d/%-5d ", read, capacity));
                    if (read << 1 < capacity) {
                        session.decreaseReadBufferSize();
                    } else if (read == capacity) {
                        session.increaseReadBufferSize();
                    }
                }
            }
            if (print) {
                System.out.printf("  #%-2d %-40s -> %d%n", m, line, session.getConfig().getReadBufferSize());
            }
        }
        return events;
    }

    /** Netty 3.6: one direct buffer per worker, at least as large as the predicted size (rounded
     *  up to 1 KiB); the predictor steps up fast and down slowly. The buffer pool is modelled. */
    public static void netty3(int size, List<int[]> arrivals) {
        AdaptiveReceiveBufferSizePredictor predictor = new AdaptiveReceiveBufferSizePredictor();
        int direct = 0;
        System.out.println("Netty 3: message -> reads (bytes read / direct buffer) -> predicted size after");
        for (int m = 0; m < arrivals.size(); m++) {
            StringBuilder line = new StringBuilder();
            for (int part : parts(arrivals.get(m), size)) {
                int left = part;
                while (left > 0) {
                    int predicted = predictor.nextReceiveBufferSize();
                    if (direct < predicted) {
                        direct = (predicted + 1023) / 1024 * 1024;
                    }
                    int read = Math.min(left, direct);
                    left -= read;
                    line.append(String.format("%5d/%-5d ", read, direct));
                    predictor.previousReceiveBufferSize(read);
                }
            }
            System.out.printf("  #%-2d %-40s -> %d%n", m, line, predictor.nextReceiveBufferSize());
        }
    }

    /** Netty 4.2: a pooled buffer of the handle's guess per read; a read that fills it is followed
     *  by another in the same event (up to 16); the guess is adjusted at the end of the event.
     *  Reads of one event are printed together, events are separated by "|". */
    public static void netty4(int size, List<int[]> arrivals) {
        EmbeddedChannel channel = new EmbeddedChannel();
        // A NIO socket channel reads at most 16 times per event (its ChannelMetadata).
        RecvByteBufAllocator.ExtendedHandle handle = (RecvByteBufAllocator.ExtendedHandle)
                new AdaptiveRecvByteBufAllocator().maxMessagesPerRead(16).newHandle();
        System.out.println("Netty 4: message -> reads (bytes read / buffer) -> guess after");
        try {
            for (int m = 0; m < arrivals.size(); m++) {
                StringBuilder line = new StringBuilder();
                for (int part : parts(arrivals.get(m), size)) {
                    for (int left = part; left > 0; ) {
                        left = netty4Event(handle, channel, left, line);
                    }
                }
                System.out.printf("  #%-2d %-40s -> %d%n", m, line, handle.guess());
            }
        } finally {
            channel.finishAndReleaseAll();
        }
    }

    /** One read event of Netty 4's NIO byte channel; returns the bytes still unread. */
    private static int netty4Event(RecvByteBufAllocator.ExtendedHandle handle, EmbeddedChannel channel,
                                   int left, StringBuilder line) {
        handle.reset(channel.config());
        do {
            ByteBuf buf = handle.allocate(ByteBufAllocator.DEFAULT);
            int capacity = buf.writableBytes();
            buf.release();
            int read = Math.min(left, capacity);
            left -= read;
            handle.attemptedBytesRead(capacity);
            handle.lastBytesRead(read);
            if (read == 0) {  // the socket is empty: Netty stops reading
                line.append("0 ");
                break;
            }
            handle.incMessagesRead(1);
            line.append(String.format("%5d/%-5d ", read, capacity));
        } while (handle.continueReading());
        handle.readComplete();
        line.append("| ");
        return left;
    }
}
