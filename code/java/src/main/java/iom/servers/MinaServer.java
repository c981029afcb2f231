/*
 * java-mina: Apache Mina 2.2: a NioSocketAcceptor, IO processors (cores + 1 Selector threads),
 * a filter chain and an IoHandler. The acceptor is set up, bound and stopped by
 * iom.common.MinaAcceptor, as the Mina echo server's (iom.echo.MinaEcho) is.
 *
 * The handler keeps each session's request bytes and answers the complete requests of each
 * message with one session.write(): Mina sends every IoBuffer written with a write(2) of its
 * own, so the responses are gathered in one buffer first. With --work-ms the handler would
 * block its IO processor and every session on it, so an ExecutorFilter (an
 * OrderedThreadPoolExecutor of --pool threads, default 64) runs the handler instead: a
 * session's events stay in order, different sessions run in parallel. --spin-us runs where
 * the handler runs. One subtlety: the ExecutorFilter does not carry inputClosed (the peer's
 * FIN), which would overtake the requests still queued for the pool; a small filter turns
 * it into a message first.
 *
 * Build: make -C code java
 * Run:   $(code/tools/find-jdk)/bin/java -cp 'code/java/target/classes:code/java/target/lib/*' \
 *            iom.servers.MinaServer --port 8080 [--work-ms 20 --pool 64]
 * Try:   curl -s http://127.0.0.1:8080/
 * Chapter: book/java/frameworks.md
 */
package iom.servers;

import iom.common.Http;
import iom.common.MinaAcceptor;
import iom.common.Options;
import iom.common.RequestBuffer;
import iom.common.Work;
import java.nio.ByteBuffer;
import org.apache.mina.core.buffer.IoBuffer;
import org.apache.mina.core.filterchain.IoFilterAdapter;
import org.apache.mina.core.service.IoHandlerAdapter;
import org.apache.mina.core.session.IoSession;
import org.apache.mina.filter.executor.ExecutorFilter;
import org.apache.mina.transport.socket.nio.NioSocketAcceptor;

public final class MinaServer {
    private MinaServer() {}

    static final int DEFAULT_POOL = 64;
    /** Mina's own default (new NioSocketAcceptor()), made explicit: cores + 1. */
    static final int IO_PROCESSORS = Runtime.getRuntime().availableProcessors() + 1;
    private static final String REQUESTS = "requests", CLOSING = "closing";
    private static final Object FIN = new Object();

    // BEGIN handler
    static final class HelloHandler extends IoHandlerAdapter {
        private final Options opts;

        HelloHandler(Options opts) {
            this.opts = opts;
        }

        @Override
        public void sessionCreated(IoSession session) {
            session.setAttribute(REQUESTS, new RequestBuffer());
        }

        @Override
        public void messageReceived(IoSession session, Object message) throws InterruptedException {
            if (message == FIN) { // the peer's FIN, in order after its requests
                session.closeOnFlush();
                return;
            }
            if (session.containsAttribute(CLOSING)) {
                return; // whatever comes after a closing request is ignored
            }
            RequestBuffer requests = (RequestBuffer) session.getAttribute(REQUESTS);
            ByteBuffer in = ((IoBuffer) message).buf();
            IoBuffer out = IoBuffer.allocate(1024).setAutoExpand(true); // this message's responses
            boolean closing = false;
            while (!closing && in.hasRemaining()) {
                requests.put(in);
                int parsed;
                while (!closing && (parsed = requests.next()) != Http.INCOMPLETE) {
                    if (parsed > 0) {
                        Work.simulate(opts);
                    }
                    out.put(Http.response(parsed));
                    closing = Http.closeAfter(parsed);
                }
            }
            if (out.position() > 0) {
                session.write(out.flip()); // one write for every request the message completed
            }
            if (closing) {
                session.setAttribute(CLOSING, true);
                session.closeOnFlush();
            }
        }

        @Override
        public void exceptionCaught(IoSession session, Throwable cause) {
            session.closeNow(); // a reset peer, usually: this session only
        }
    }
    // END handler

    /** Passes the peer's FIN on as a message, so that an ExecutorFilter keeps it in order. */
    static final class FinInOrder extends IoFilterAdapter {
        @Override
        public void inputClosed(NextFilter next, IoSession session) {
            next.messageReceived(session, FIN);
        }
    }

    public static void main(String[] args) {
        Options opts = Options.parse("java-mina", args);
        // BEGIN acceptor
        NioSocketAcceptor acceptor = MinaAcceptor.open(IO_PROCESSORS); // SO_REUSEADDR, quiet about reset peers
        acceptor.setBacklog(opts.backlog);
        acceptor.getSessionConfig().setTcpNoDelay(true); // Mina's default is off: see Server.noDelay
        acceptor.getFilterChain().addLast("fin-in-order", new FinInOrder());
        if (opts.workMs > 0) {
            int pool = opts.pool(DEFAULT_POOL);
            acceptor.getFilterChain().addLast("executor", new ExecutorFilter(pool, pool));
        }
        acceptor.setHandler(new HelloHandler(opts));
        // END acceptor
        MinaAcceptor.listen(acceptor, opts.host, opts.port);
    }
}
