package iom.common;

import java.io.IOException;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.apache.mina.core.service.IoProcessor;
import org.apache.mina.transport.socket.nio.NioSocketAcceptor;

/**
 * The Mina acceptor as the book's two Mina servers set it up: java-mina
 * (iom.servers.MinaServer) and the 2013 benchmark's echo server (iom.echo.MinaEcho).
 * {@link #open} makes a NioSocketAcceptor with SO_REUSEADDR that does not log every reset
 * peer; each server then adds its options, filters and handler; {@link #listen} binds it
 * (exit 1 naming the call if that fails), unbinds it on SIGTERM and prints the READY line.
 *
 * Only API that mina-core 2.0.7 has too: MinaEcho is compiled against 2.2.10 and also runs,
 * this class with it, on the benchmark's 2.0.7 jar.
 */
public final class MinaAcceptor {
    private MinaAcceptor() {}

    /** Mina logs every connection a peer resets, at SEVERE: per-connection logging, which the
     *  contract forbids. Only that logger is silenced; the field keeps java.util.logging from
     *  dropping the setting with the logger. */
    private static final Logger READ_RESETS = Logger.getLogger(IoProcessor.class.getName());

    /** An acceptor with ioProcessors IO processors (a Selector thread each) and SO_REUSEADDR. */
    public static NioSocketAcceptor open(int ioProcessors) {
        READ_RESETS.setLevel(Level.OFF);
        NioSocketAcceptor acceptor = new NioSocketAcceptor(ioProcessors);
        acceptor.setReuseAddress(true);
        return acceptor;
    }

    /**
     * Bind to host:port ("error: bind HOST:PORT: reason" and exit 1 if that fails); on SIGTERM
     * unbind, then close alsoOnStop in order; then print "READY port=N".
     */
    public static void listen(NioSocketAcceptor acceptor, String host, int port, AutoCloseable... alsoOnStop) {
        try {
            acceptor.bind(Server.address(host, port));
        } catch (IOException e) {
            throw Server.halt("bind " + host + ":" + port, e);
        }
        AutoCloseable[] onStop = new AutoCloseable[1 + alsoOnStop.length];
        onStop[0] = acceptor::unbind;
        System.arraycopy(alsoOnStop, 0, onStop, 1, alsoOnStop.length);
        Server.stopOnSignal(onStop);
        Server.ready(acceptor.getLocalAddress().getPort());
    }
}
