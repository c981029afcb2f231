package iom.common;

import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * One connection's unanswered request bytes, for the servers that do not block on a read
 * (NIO, NIO.2, Netty, Mina): bytes go in as they arrive, complete requests come out.
 * At most Http.MAX_REQUEST bytes are held, like the C servers' per-connection buffer.
 */
public final class RequestBuffer {
    private final byte[] bytes = new byte[Http.MAX_REQUEST];
    private final ByteBuffer in = ByteBuffer.wrap(bytes); // position: bytes held

    /** The buffer a channel reads into: from the bytes held up to the capacity. */
    public ByteBuffer in() {
        return in;
    }

    /** Copy as much of src as fits; src's position advances. Returns the bytes taken. */
    public int put(ByteBuffer src) {
        int n = Math.min(src.remaining(), in.remaining());
        in.put(in.position(), src, src.position(), n);
        in.position(in.position() + n);
        src.position(src.position() + n);
        return n;
    }

    /** The next request: Http.parse's result; a complete request leaves the buffer. */
    public int next() {
        int held = in.position();
        int parsed = Http.parse(bytes, 0, held);
        if (parsed > 0) {
            int n = Http.length(parsed);
            System.arraycopy(bytes, n, bytes, 0, held - n);
            in.position(held - n);
        }
        return parsed;
    }

    /**
     * Every complete request held, in order, up to the first after which the connection closes
     * (a bad one included): Http.parse's results, to be answered with one write. They leave
     * the buffer. Empty when no request is complete.
     */
    public int[] batch() {
        int[] batch = new int[16];
        int n = 0;
        for (int parsed; (n == 0 || !Http.closeAfter(batch[n - 1])) && (parsed = next()) != Http.INCOMPLETE; n++) {
            if (n == batch.length) {
                batch = Arrays.copyOf(batch, 2 * n);
            }
            batch[n] = parsed;
        }
        return Arrays.copyOf(batch, n);
    }
}
