package iom.common;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;
import java.util.concurrent.Executor;

/**
 * Doug Lea's Handler: one connection on a {@link Reactor}, driven by readiness. The reactor
 * runs {@link #run} when the channel is readable or writable; the handler reads what is
 * there, answers every complete request (a batch, in one write), writes what the socket
 * takes, and tells the selector what it waits for next (read, write, or nothing while a
 * worker has the batch). Sets TCP_NODELAY.
 *
 * With {@code workers == null} the simulated work runs right here, on the reactor thread:
 * every other connection of this reactor waits meanwhile (java-nio's lesson). With a worker
 * pool, a worker does the batch's work, request by request, and hands the responses back to
 * the reactor (java-nio-workers), one batch of a connection at a time, so pipelined
 * responses keep their order.
 */
public final class NioHandler implements Runnable {
    private final Reactor reactor;
    private final SocketChannel channel;
    private final SelectionKey key;
    private final Options opts;
    private final Executor workers;
    private final RequestBuffer requests = new RequestBuffer();
    private ByteBuffer out = ByteBuffer.allocate(1024); // responses not yet written (write mode)
    private boolean eof, closing, working;

    /**
     * Make the channel one of the reactor's connections: non-blocking, TCP_NODELAY, and
     * registered for reads with a new handler as its key's attachment, which is how the
     * reactor finds the handler to run (Lea's dispatch). Call it on the reactor's thread.
     */
    public static NioHandler register(Reactor reactor, SocketChannel channel, Options opts, Executor workers)
            throws IOException {
        return new NioHandler(reactor, channel, opts, workers);
    }

    private NioHandler(Reactor reactor, SocketChannel channel, Options opts, Executor workers) throws IOException {
        this.reactor = reactor;
        this.channel = channel;
        this.opts = opts;
        this.workers = workers;
        channel.configureBlocking(false);
        Server.noDelay(channel);
        key = channel.register(reactor.selector(), SelectionKey.OP_READ, this);
    }

    // BEGIN handler
    @Override
    public void run() {
        try {
            if (key.isReadable() && channel.read(requests.in()) < 0) {
                eof = true; // the peer half-closed: answer what came, then close
            }
            serve();
        } catch (IOException e) {
            close();
        }
    }

    /** Answer the complete requests held, then write and choose what to wait for. */
    private void serve() throws IOException {
        if (!working && !closing) {
            int[] batch = requests.batch(); // every complete request held: one write for them all
            if (batch.length > 0 && workers != null) { // the work runs in a worker; the reactor moves on
                working = true;
                workers.execute(() -> work(batch));
            } else {
                simulate(batch);
                respond(batch);
            }
        }
        flush();
    }
    // END handler

    // BEGIN handoff
    /** In a worker thread: do the batch's work, then give the responses back to the reactor's thread. */
    private void work(int[] batch) {
        simulate(batch);
        reactor.execute(() -> {
            if (!channel.isOpen()) {
                return; // closed meanwhile (a write failed)
            }
            working = false;
            respond(batch);
            try {
                serve(); // answer pipelined requests that came meanwhile, write, re-arm
            } catch (IOException e) {
                close();
            }
        });
    }
    // END handoff

    /** The work of each complete request of the batch, in order (none for a bad one). */
    private void simulate(int[] batch) {
        for (int parsed : batch) {
            try {
                if (parsed > 0) {
                    Work.simulate(opts);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt(); // only on shutdown: answer anyway
            }
        }
    }

    /** The batch's responses, appended to those not yet written. */
    private void respond(int[] batch) {
        for (int parsed : batch) {
            byte[] r = Http.response(parsed);
            if (out.remaining() < r.length) {
                ByteBuffer bigger = ByteBuffer.allocate(Math.max(2 * out.capacity(), out.position() + r.length));
                out = bigger.put(out.flip());
            }
            out.put(r);
            closing |= Http.closeAfter(parsed);
        }
    }

    // BEGIN flush
    private void flush() throws IOException {
        out.flip();
        channel.write(out);
        out.compact();
        if (out.position() > 0) {
            key.interestOps(SelectionKey.OP_WRITE); // the socket is full: wait, and read nothing more
        } else if (closing || (eof && !working)) {
            close();
        } else {
            key.interestOps(working || eof ? 0 : SelectionKey.OP_READ);
        }
    }
    // END flush

    private void close() {
        key.cancel();
        try {
            channel.close();
        } catch (IOException e) {
            // closed anyway
        }
    }
}
