package iom.common;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;

/**
 * Serve one connection with blocking reads and writes until the peer closes, asks to close,
 * sends something malformed or stays silent for the idle timeout (2 s): the Java twin of
 * serve_connection in code/c/common/server.c, used by every blocking model
 * (java-blocking, java-thread, java-threadpool, java-vthread). Always closes the socket.
 */
public final class BlockingConnection {
    private BlockingConnection() {}

    // BEGIN serve-connection
    public static void serve(Socket socket, Options opts) {
        byte[] buf = new byte[Http.MAX_REQUEST];
        int len = 0;
        try (socket) {
            socket.setSoTimeout(opts.idleTimeoutMs); // a silent client must not hold a thread forever
            InputStream in = socket.getInputStream();
            OutputStream out = socket.getOutputStream();
            for (;;) {
                int parsed;
                while ((parsed = Http.parse(buf, 0, len)) > 0) { // pipelined requests: one by one
                    Work.simulate(opts);
                    out.write(Http.response(parsed));
                    if (!Http.keepAlive(parsed)) {
                        return;
                    }
                    int n = Http.length(parsed);
                    System.arraycopy(buf, n, buf, 0, len - n);
                    len -= n;
                }
                if (parsed != Http.INCOMPLETE) { // malformed or too large: answer and close
                    out.write(Http.response(parsed));
                    return;
                }
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
