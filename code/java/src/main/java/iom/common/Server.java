package iom.common;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.StandardSocketOptions;
import java.net.UnknownHostException;
import java.nio.channels.NetworkChannel;
import java.nio.channels.ServerSocketChannel;
import java.util.concurrent.CountDownLatch;

/**
 * What every Java server of the book shares besides HTTP: listening, TCP_NODELAY on each
 * connection, the READY line, stopping on SIGTERM with exit status 0, and failing with exit status 1 and a message
 * that names the call that failed (like die() in code/c/common/server.c).
 */
public final class Server {
    private Server() {}

    private static volatile boolean stopping;

    /** The address to bind: --host, which must be an IP address, and --port. */
    public static InetSocketAddress address(Options opts) {
        return address(opts.host, opts.port);
    }

    /** The address to bind: host, which must be an IP address, and port. */
    public static InetSocketAddress address(String host, int port) {
        try {
            return new InetSocketAddress(InetAddress.getByName(host), port);
        } catch (UnknownHostException e) {
            throw halt("resolve " + host, e);
        }
    }

    /** Opens a listening socket of one kind (java.net, java.nio or NIO.2), not yet bound. */
    @FunctionalInterface
    public interface Open<S> {
        S open() throws IOException;
    }

    /** Binds it: that kind's bind(address, backlog). */
    @FunctionalInterface
    public interface Bind<S> {
        void bind(S socket, InetSocketAddress address, int backlog) throws IOException;
    }

    /**
     * A listening socket of any kind, bound to --host:--port with --backlog: the one bind of the
     * servers that bind a JDK socket. A failure exits 1 naming the call, "error: socket: ..." or
     * "error: bind 127.0.0.1:8080: Address already in use"; the process, and the socket with it,
     * ends there.
     */
    public static <S> S listen(Options opts, Open<S> open, Bind<S> bind) {
        InetSocketAddress addr = address(opts);
        S socket;
        try {
            socket = open.open();
        } catch (IOException e) {
            throw halt("socket", e);
        }
        try {
            bind.bind(socket, addr, opts.backlog);
        } catch (IOException e) {
            throw halt("bind " + opts.host + ":" + opts.port, e);
        }
        return socket;
    }

    /** A blocking listening socket (java.net), bound and listening. */
    public static ServerSocket listen(Options opts) {
        return listen(opts, () -> {
            ServerSocket s = new ServerSocket();
            s.setReuseAddress(true);
            return s;
        }, ServerSocket::bind);
    }

    /** A listening channel (java.nio), bound and listening, still in blocking mode. */
    public static ServerSocketChannel listenChannel(Options opts) {
        return listen(opts, () -> ServerSocketChannel.open().setOption(StandardSocketOptions.SO_REUSEADDR, true),
                ServerSocketChannel::bind);
    }

    // BEGIN no-delay
    /**
     * TCP_NODELAY on an accepted connection, as set_nodelay in code/c/common/server.c. With
     * Nagle's algorithm on, a small write waits while an earlier one is unacknowledged, and the
     * client delays that ACK by up to 40 ms: pipelined requests would get their responses 40 ms
     * apart. nginx sets it on keep-alive connections. Netty and Mina set it through their options.
     */
    public static void noDelay(Socket socket) throws IOException {
        socket.setTcpNoDelay(true);
    }

    /** TCP_NODELAY on an accepted channel (java.nio, NIO.2): see {@link #noDelay(Socket)}. */
    public static void noDelay(NetworkChannel channel) throws IOException {
        channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
    }
    // END no-delay

    // BEGIN ready-and-stop
    /** Print "READY port=N" once listening: the harness waits for exactly this line. */
    public static void ready(int port) {
        System.out.println("READY port=" + port);
        System.out.flush();
    }

    /**
     * On SIGTERM (or SIGINT) close these (the listening socket first) and exit 0. The JVM's
     * own exit status on SIGTERM is 143; halt(0) in the hook makes it the contract's 0.
     * Call it only after setup succeeded: a setup error must still exit 1.
     */
    public static void stopOnSignal(AutoCloseable... resources) {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stopping = true;
            for (AutoCloseable r : resources) {
                try {
                    r.close();
                } catch (Exception e) {
                    // stopping anyway: a resource that fails to close is gone with the process
                }
            }
            Runtime.getRuntime().halt(0);
        }, "stop-on-signal"));
    }
    // END ready-and-stop

    /** True once SIGTERM has arrived: failures after that are the shutdown, not errors. */
    public static boolean stopping() {
        return stopping;
    }

    /**
     * Never returns: ends the process with exit 1 and "error: CALL: reason" on stderr (the
     * contract's setup error). While stopping, a failure is the shutdown closing things under
     * a thread's feet: that thread blocks until the shutdown hook halts with 0 instead.
     * Declared to return an exception only so that callers write {@code throw halt(...)} and
     * the compiler knows the code after it is unreachable.
     */
    public static RuntimeException halt(String call, Throwable e) {
        if (stopping) {
            awaitHalt();
        }
        Throwable cause = e;
        while (cause.getCause() != null) { // the root cause names the errno (Mina wraps it)
            cause = cause.getCause();
        }
        System.err.println("error: " + call + ": " + cause.getMessage());
        System.err.flush();
        Runtime.getRuntime().halt(1);
        return new IllegalStateException("unreachable");
    }

    private static void awaitHalt() {
        try {
            new CountDownLatch(1).await();
        } catch (InterruptedException ignored) {
            Thread.currentThread().interrupt();
        }
        throw new IllegalStateException("stopping");
    }
}
