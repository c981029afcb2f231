/*
 * java-nio2: the proactor: AsynchronousServerSocketChannel with CompletionHandlers (NIO.2).
 *
 * Nothing here waits for readiness. The server starts an operation (accept, read, write)
 * and names the handler to run when it has completed; the JDK does the IO (with epoll
 * underneath on Linux) and runs the handler on a thread of the channel group's pool
 * (--pool, default 64). Each connection is a chain: read -> answer every complete
 * request (the work sleeps in the pool thread) -> one write for them all -> read again.
 * A blocked handler holds a pool thread, so 64 threads overlap 64 requests' work.
 *
 * Build: make -C code java
 * Run:   $(code/tools/find-jdk)/bin/java -cp 'code/java/target/classes:code/java/target/lib/*' \
 *            iom.servers.Nio2 --port 8080 [--pool 64] [--work-ms 20]
 * Try:   curl -s http://127.0.0.1:8080/
 * Chapter: book/java/nio.md
 */
package iom.servers;

import iom.common.Http;
import iom.common.Options;
import iom.common.RequestBuffer;
import iom.common.Server;
import iom.common.Work;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.AsynchronousChannelGroup;
import java.nio.channels.AsynchronousCloseException;
import java.nio.channels.AsynchronousServerSocketChannel;
import java.nio.channels.AsynchronousSocketChannel;
import java.nio.channels.CompletionHandler;

public final class Nio2 {
    private Nio2() {}

    static final int DEFAULT_POOL = 64;

    /** One connection: its request bytes, and the responses of one round. */
    private record Connection(AsynchronousSocketChannel channel, Options opts, RequestBuffer requests) {
        // BEGIN read
        void read() {
            channel.read(requests.in(), null, new CompletionHandler<Integer, Void>() {
                @Override
                public void completed(Integer n, Void unused) {
                    answer(n < 0);
                }

                @Override
                public void failed(Throwable e, Void unused) {
                    close();
                }
            });
        }
        // END read

        /** Answer every complete request held, in one write; then read again, or close. */
        void answer(boolean eof) {
            ByteBuffer out = ByteBuffer.allocate(1024);
            boolean close = false;
            int parsed;
            while (!close && (parsed = requests.next()) != Http.INCOMPLETE) {
                if (parsed > 0 && !simulate()) {
                    close();
                    return;
                }
                byte[] r = Http.response(parsed);
                if (out.remaining() < r.length) {
                    out = ByteBuffer.allocate(2 * out.capacity() + r.length).put(out.flip());
                }
                out.put(r);
                close = Http.closeAfter(parsed);
            }
            write(out.flip(), close || eof);
        }

        // BEGIN write
        void write(ByteBuffer out, boolean closeAfter) {
            if (!out.hasRemaining()) {
                if (closeAfter) {
                    close();
                } else {
                    read();
                }
                return;
            }
            channel.write(out, null, new CompletionHandler<Integer, Void>() {
                @Override
                public void completed(Integer n, Void unused) {
                    write(out, closeAfter); // the rest, if the socket took only part of it
                }

                @Override
                public void failed(Throwable e, Void unused) {
                    close();
                }
            });
        }
        // END write

        boolean simulate() {
            try {
                Work.simulate(opts);
                return true;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }

        void close() {
            try {
                channel.close();
            } catch (IOException e) {
                // closed anyway
            }
        }
    }

    public static void main(String[] args) throws IOException, InterruptedException {
        Options opts = Options.parse("java-nio2", args);
        AsynchronousChannelGroup group = AsynchronousChannelGroup.withFixedThreadPool(
                opts.pool(DEFAULT_POOL), Thread.ofPlatform().name("nio2-", 0).daemon().factory());
        AsynchronousServerSocketChannel server = Server.listen(opts,
                () -> AsynchronousServerSocketChannel.open(group), AsynchronousServerSocketChannel::bind);
        Server.stopOnSignal(server);
        Server.ready(((InetSocketAddress) server.getLocalAddress()).getPort());

        // BEGIN accept
        server.accept(null, new CompletionHandler<AsynchronousSocketChannel, Void>() {
            @Override
            public void completed(AsynchronousSocketChannel channel, Void unused) {
                server.accept(null, this); // the next accept first, then this connection
                Connection connection = new Connection(channel, opts, new RequestBuffer());
                try {
                    Server.noDelay(channel);
                    connection.read();
                } catch (IOException e) {
                    connection.close(); // this client only: the server goes on
                }
            }

            @Override
            public void failed(Throwable e, Void unused) {
                if (!(e instanceof AsynchronousCloseException)) {
                    throw Server.halt("accept", e);
                }
            }
        });
        // END accept
        Thread.currentThread().join(); // the pool's threads do everything from here
    }
}
