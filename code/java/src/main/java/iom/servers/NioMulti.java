/*
 * java-nio-multi: Lea's multiple reactors: one acceptor, one Selector thread per core.
 *
 * The main thread blocks in accept() and deals the new connections round robin to N
 * sub-reactors (--pool, default Runtime.availableProcessors()), each a thread with its own
 * Selector running iom.common.Reactor. A connection stays on its reactor for life, so no
 * locks are needed; the acceptor hands it over through the reactor's task queue (a
 * Selector is not to be registered with from another thread while it selects). This is
 * the shape of Netty's boss and worker event loops. The work (--work-ms) runs on the
 * connection's reactor, so N reactors serve N requests at a time.
 *
 * Build: make -C code java
 * Run:   $(code/tools/find-jdk)/bin/java -cp 'code/java/target/classes:code/java/target/lib/*' \
 *            iom.servers.NioMulti --port 8080 [--pool 2]
 * Try:   curl -s http://127.0.0.1:8080/
 * Chapter: book/java/nio.md
 */
package iom.servers;

import iom.common.NioHandler;
import iom.common.Options;
import iom.common.Reactor;
import iom.common.Server;
import java.io.IOException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;

public final class NioMulti {
    private NioMulti() {}

    public static void main(String[] args) {
        Options opts = Options.parse("java-nio-multi", args);
        ServerSocketChannel server = Server.listenChannel(opts); // blocking: only the acceptor uses it
        // BEGIN reactors
        Reactor[] reactors = new Reactor[opts.pool(Runtime.getRuntime().availableProcessors())];
        for (int i = 0; i < reactors.length; i++) {
            reactors[i] = new Reactor();
            Thread.ofPlatform().name("reactor-" + i).daemon().start(reactors[i]);
        }
        // END reactors
        Server.stopOnSignal(server);
        Server.ready(server.socket().getLocalPort());

        // BEGIN accept-loop
        for (long n = 0; ; n++) {
            SocketChannel channel;
            try {
                channel = server.accept();
            } catch (IOException e) {
                throw Server.halt("accept", e);
            }
            Reactor reactor = reactors[(int) (n % reactors.length)];
            reactor.execute(() -> register(reactor, channel, opts));
        }
        // END accept-loop
    }

    /** On the reactor's own thread: make the channel one of its connections. */
    private static void register(Reactor reactor, SocketChannel channel, Options opts) {
        try {
            NioHandler.register(reactor, channel, opts, null);
        } catch (IOException e) {
            try {
                channel.close();
            } catch (IOException ignored) {
                // closed anyway
            }
        }
    }
}
