package iom.common;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;

/**
 * The accept loop every blocking model shares (java-blocking, java-thread, java-threadpool,
 * java-vthread), as B1, BN and BP of the JDK's old NIO sample server share theirs: listen,
 * stop on SIGTERM, print the READY line, then accept connections until the process ends and
 * give each to the model's {@link Handoff}, which decides which thread runs
 * {@link BlockingConnection#serve} on it. That hand-off is all a blocking model's class adds.
 */
public final class BlockingServer {
    private BlockingServer() {}

    /** How a model hands an accepted connection to the thread that will serve it. */
    @FunctionalInterface
    public interface Handoff {
        void handOff(Socket socket) throws InterruptedException;
    }

    /** Listen on --host:--port and serve through handoff until SIGTERM: never returns normally. */
    public static void run(Options opts, Handoff handoff) throws InterruptedException {
        ServerSocket server = Server.listen(opts);
        Server.stopOnSignal(server);
        Server.ready(server.getLocalPort());

        // BEGIN accept-loop
        for (;;) {
            Socket socket;
            try {
                socket = server.accept();
            } catch (IOException e) {
                throw Server.halt("accept", e);
            }
            handoff.handOff(socket); // the one step in which the blocking models differ
        }
        // END accept-loop
    }
}
