/*
 * java-nio: Doug Lea's basic Reactor: one thread, one Selector, non-blocking channels.
 *
 * The reactor (iom.common.Reactor) waits on the Selector for every socket at once and
 * dispatches each ready key to its attachment: the Acceptor below for the listening
 * channel, a Handler (iom.common.NioHandler) for each connection. Nothing blocks on one
 * client, so hello-world needs a single thread. But --work-ms sleeps on the reactor thread,
 * and that is the lesson: while one request "works", no other connection is served, so
 * requests are handled one after another, as in java-blocking. java-nio-workers fixes it.
 *
 * Build: make -C code java
 * Run:   $(code/tools/find-jdk)/bin/java -cp 'code/java/target/classes:code/java/target/lib/*' \
 *            iom.servers.NioReactor --port 8080 [--work-ms 20]
 * Try:   curl -s http://127.0.0.1:8080/
 * Chapter: book/java/nio.md
 */
package iom.servers;

import iom.common.NioHandler;
import iom.common.Options;
import iom.common.Reactor;
import iom.common.Server;
import java.io.IOException;
import java.nio.channels.SelectionKey;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.concurrent.Executor;

public final class NioReactor {
    private NioReactor() {}

    // BEGIN acceptor
    /** Lea's Acceptor: attached to the listening channel's key, run when a connection waits. */
    record Acceptor(Reactor reactor, ServerSocketChannel server, Options opts, Executor workers)
            implements Runnable {
        @Override
        public void run() {
            SocketChannel channel;
            try {
                channel = server.accept(); // non-blocking: null when another thread was faster
            } catch (IOException e) {
                throw Server.halt("accept", e);
            }
            if (channel == null) {
                return;
            }
            try {
                NioHandler.register(reactor, channel, opts, workers);
            } catch (IOException e) {
                try {
                    channel.close(); // this client only: the server goes on
                } catch (IOException ignored) {
                    // closed anyway
                }
            }
        }
    }
    // END acceptor

    /** One reactor thread (this one) serving the listening channel and every connection. */
    static void serve(Options opts, Executor workers) throws IOException {
        ServerSocketChannel server = Server.listenChannel(opts);
        Reactor reactor = new Reactor();
        // BEGIN setup
        server.configureBlocking(false);
        server.register(reactor.selector(), SelectionKey.OP_ACCEPT, new Acceptor(reactor, server, opts, workers));
        // END setup
        Server.stopOnSignal(server);
        Server.ready(server.socket().getLocalPort());
        reactor.run();
    }

    public static void main(String[] args) throws IOException {
        serve(Options.parse("java-nio", args), null); // null: the work runs on the reactor
    }
}
