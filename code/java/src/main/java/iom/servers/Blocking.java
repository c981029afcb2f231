/*
 * java-blocking: blocking IO, one connection at a time (java.net.ServerSocket and Socket).
 *
 * The main thread blocks in accept(), then in read() and write() for that one client until
 * it is done; every other client waits in the kernel's listen queue meanwhile. A client that
 * sends nothing is dropped after 2 s, or it would stop the server. The Java twin of
 * c-sequential, and the corrected form of the source write-up's SimpleIO (iom.seed000).
 *
 * Build: make -C code java
 * Run:   $(code/tools/find-jdk)/bin/java -cp 'code/java/target/classes:code/java/target/lib/*' \
 *            iom.servers.Blocking --port 8080 [--work-ms 20]
 * Try:   curl -s http://127.0.0.1:8080/
 * Chapter: book/java/blocking.md
 */
package iom.servers;

import iom.common.BlockingConnection;
import iom.common.Options;
import iom.common.Server;
import java.io.IOException;
import java.net.ServerSocket;

public final class Blocking {
    private Blocking() {}

    public static void main(String[] args) {
        Options opts = Options.parse("java-blocking", args);
        ServerSocket server = Server.listen(opts);
        Server.stopOnSignal(server);
        Server.ready(server.getLocalPort());

        // BEGIN accept-loop
        for (;;) {
            try {
                BlockingConnection.serve(server.accept(), opts); // everyone else waits until this returns
            } catch (IOException e) {
                throw Server.halt("accept", e);
            }
        }
        // END accept-loop
    }
}
