/*
 * mina-2.0.7 / mina-2.2.10: the echo server of the 2013 Mina vs Netty benchmark, on Apache Mina:
 * a NioSocketAcceptor with --io-threads IO processors (one Selector thread each), an ExecutorFilter
 * whose pool of up to --executor-threads runs the handler (a session's events stay in order), and
 * a handler that writes every buffer it receives straight back: one read event, one write.
 *
 * Mina reads each event into a new buffer of the session's readBufferSize (2048 at first), and
 * adapts that size: it doubles when a read fills the buffer and halves after reads that use less
 * than half of it (64..65536). A filter ahead of the ExecutorFilter, on the IO thread, counts each
 * read event by (bytes read, buffer capacity), so the statistics show how messages were cut up.
 * As in Mina, --min/--max-read-buffer bound the adaptation but leave the first size at 2048: to
 * pin the size, give all three (--read-buffer 4096 --min-read-buffer 4096 --max-read-buffer 4096).
 *
 * One class for both versions: compiled against mina-core 2.2.10, it uses only API that 2.0.7
 * has too (close(true), not 2.0.12's closeNow(); no inputClosed), so it runs unchanged on either;
 * so does iom.common.MinaAcceptor, the acceptor setup it shares with java-mina.
 *
 * Build: make -C code java
 * Run:   cd code/java && J=$(../tools/find-jdk)/bin/java
 *        Mina 2.2.10: $J -cp 'target/classes:target/lib/*' iom.echo.MinaEcho --port 8080
 *        Mina 2.0.7:  $J -cp "target/classes:target/lib-mina-2.0.7/mina-core-2.0.7.jar:$(ls target/lib/*.jar \
 *                         | grep -v /mina-core- | paste -sd:)" iom.echo.MinaEcho --port 8080
 *        [--stats reads.csv] [--read-buffer N] [--min-read-buffer N] [--max-read-buffer N]
 *        [--allocator heap|direct|cached] [--nodelay true|false|default] [--io-threads N] [--executor-threads N]
 * Try:   bash -c 'exec 3<>/dev/tcp/127.0.0.1/8080; head -c 5120 /dev/urandom >&3; head -c 5120 <&3 | wc -c'
 * Chapter: book/java/mina-netty.md (measured in book/java/mina-netty-results.md)
 */
package iom.echo;

import iom.common.MinaAcceptor;
import iom.common.Server;
import org.apache.mina.core.buffer.CachedBufferAllocator;
import org.apache.mina.core.buffer.IoBuffer;
import org.apache.mina.core.filterchain.IoFilterAdapter;
import org.apache.mina.core.service.IoHandlerAdapter;
import org.apache.mina.core.session.IoEventType;
import org.apache.mina.core.session.IoSession;
import org.apache.mina.filter.executor.ExecutorFilter;
import org.apache.mina.transport.socket.SocketSessionConfig;
import org.apache.mina.transport.socket.nio.NioSocketAcceptor;

public final class MinaEcho {
    private MinaEcho() {}

    // BEGIN handler
    /** On an IO processor thread, before the ExecutorFilter: one call per read event. */
    static final class ReadCounter extends IoFilterAdapter {
        private final ReadStats stats;

        ReadCounter(ReadStats stats) {
            this.stats = stats;
        }

        @Override
        public void messageReceived(NextFilter next, IoSession session, Object message) {
            IoBuffer in = (IoBuffer) message; // position 0, limit = bytes read, capacity = readBufferSize
            stats.record(session.getId(), in.remaining(), in.capacity());
            next.messageReceived(session, message);
        }
    }

    /** On an executor thread: the buffer goes back as it came. */
    static final class Echo extends IoHandlerAdapter {
        @Override
        public void messageReceived(IoSession session, Object message) {
            session.write(message);
        }

        @Override
        @SuppressWarnings("deprecation") // closeNow() would be 2.0.12+; close(true) is the same in both
        public void exceptionCaught(IoSession session, Throwable cause) {
            session.close(true); // a reset peer, usually: this session only
        }
    }
    // END handler

    public static void main(String[] args) {
        EchoOptions opts = EchoOptions.parse("mina-echo", true, args);
        switch (opts.allocator) {
            case "direct" -> IoBuffer.setUseDirectBuffer(true);
            case "cached" -> IoBuffer.setAllocator(new CachedBufferAllocator()); // capacities become powers of 2
            default -> { } // heap: Mina's default, a new zeroed heap buffer per read
        }
        String mina = ReadStats.version(IoBuffer.class, "org.apache.mina", "mina-core");
        ReadStats stats = new ReadStats(mina);
        // BEGIN acceptor
        NioSocketAcceptor acceptor = MinaAcceptor.open(opts.ioThreads); // SO_REUSEADDR, quiet about reset peers
        configure(acceptor.getSessionConfig(), opts);
        ExecutorFilter executor = executorFilter(opts, mina);
        acceptor.getFilterChain().addLast("read-counter", new ReadCounter(stats));
        acceptor.getFilterChain().addLast("executor", executor);
        acceptor.setHandler(new Echo());
        // END acceptor
        MinaAcceptor.listen(acceptor, opts.host, opts.port, () -> acceptor.dispose(true), executor::destroy,
                () -> stats.save(opts.stats));
    }

    /**
     * The benchmark's {@code new ExecutorFilter(n)}: up to n threads for the default events,
     * messageSent among them. One exception. Mina 2.2 frees a written buffer just after firing
     * messageSent, and with the cached allocator (the only one whose free() does anything) the
     * pool then runs messageSent on a freed buffer: "Buffer has been freed already", and the
     * session dies. So with that allocator messageSent stays on the IO thread, unless this is
     * 2.0.7, which never frees a written buffer and keeps the benchmark's events.
     */
    private static ExecutorFilter executorFilter(EchoOptions opts, String mina) {
        if (opts.allocator.equals("cached") && !mina.equals("mina-core 2.0.7")) {
            return new ExecutorFilter(opts.executorThreads, IoEventType.EXCEPTION_CAUGHT, IoEventType.MESSAGE_RECEIVED,
                    IoEventType.SESSION_CLOSED, IoEventType.SESSION_IDLE, IoEventType.SESSION_OPENED);
        }
        return new ExecutorFilter(opts.executorThreads);
    }

    /** The read buffer flags and TCP_NODELAY; unset ones keep Mina's defaults. */
    private static void configure(SocketSessionConfig config, EchoOptions opts) {
        if (opts.minReadBuffer > 0 || opts.maxReadBuffer > 0) {
            int min = opts.minReadBuffer > 0 ? opts.minReadBuffer : config.getMinReadBufferSize();
            config.setMinReadBufferSize(1); // each setter checks min <= max against the other
            config.setMaxReadBufferSize(opts.maxReadBuffer > 0 ? opts.maxReadBuffer : config.getMaxReadBufferSize());
            try {
                config.setMinReadBufferSize(min);
            } catch (IllegalArgumentException e) { // above the maximum
                throw Server.halt("setMinReadBufferSize", e);
            }
        }
        if (opts.readBuffer > 0) {
            config.setReadBufferSize(opts.readBuffer);
        }
        if (opts.noDelay != null) {
            config.setTcpNoDelay(opts.noDelay);
        }
    }
}
