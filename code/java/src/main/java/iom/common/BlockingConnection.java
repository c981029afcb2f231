package iom.common;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;

/**
 * Serve one connection with blocking reads and writes until the peer closes, asks to close,
 * sends something malformed or stays silent for the idle timeout (--idle-timeout-s, 2 s by default; 0 = never): the Java twin of
 * serve_connection in code/c/common/server.c, used by every blocking model
 * (java-blocking, java-thread, java-threadpool, java-vthread). Always closes the socket.
 *
 * The responses to every complete request read go out in one write: they gather in a
 * BufferedOutputStream, flushed before the next blocking read (and, with --work-ms, before
 * each request's work, so that what is done does not wait for it). Sets TCP_NODELAY.
 */
public final class BlockingConnection {
    private BlockingConnection() {}

    static final int OUT_SIZE = 4096; // responses gathered per write, as the C servers' SERVE_OUT_SIZE

    // BEGIN serve-connection
    public static void serve(Socket socket, Options opts) {
        byte[] buf = new byte[Http.MAX_REQUEST];
        int len = 0;
        try (socket) {
            socket.setSoTimeout(opts.idleTimeoutMs); // a silent client must not hold a thread forever
            Server.noDelay(socket);
            InputStream in = socket.getInputStream();
            OutputStream out = new BufferedOutputStream(socket.getOutputStream(), OUT_SIZE);
            for (;;) {
                int parsed;
                while ((parsed = Http.parse(buf, 0, len)) > 0) { // pipelined requests: one by one
                    if (opts.workMs > 0) {
                        out.flush(); // what is done goes out before the next request's work
                    }
                    Work.simulate(opts);
                    out.write(Http.response(parsed)); // into the buffer
                    if (!Http.keepAlive(parsed)) {
                        out.flush();
                        return;
                    }
                    int n = Http.length(parsed);
                    System.arraycopy(buf, n, buf, 0, len - n);
                    len -= n;
                }
                if (parsed != Http.INCOMPLETE) { // malformed or too large: answer and close
                    out.write(Http.response(parsed));
                    out.flush();
                    return;
                }
                out.flush(); // every complete request answered: one write, then wait for more
                int r = in.read(buf, len, buf.length - len);
                if (r < 0) {
                    return; // the peer closed
                }
                len += r;
            }
        } catch (IOException e) {
            // reset, idle timeout or stop: try-with-resources has closed the socket
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // the socket is closed; the thread ends
        }
    }
    // END serve-connection
}
