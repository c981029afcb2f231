/*
 * java-thread: thread per connection (a new platform thread for every accepted socket).
 *
 * The main thread blocks in accept() and starts a thread per connection, which blocks in
 * read(), does the request's work and writes, until the client leaves (or stays silent
 * for 2 s). Simple and concurrent, and each connection costs a kernel thread with its own
 * stack: the cost chapter measures it against virtual threads and NIO. Twin of c-thread.
 *
 * Build: make -C code java
 * Run:   $(code/tools/find-jdk)/bin/java -cp 'code/java/target/classes:code/java/target/lib/*' \
 *            iom.servers.ThreadPerConnection --port 8080 [--work-ms 20]
 * Try:   curl -s http://127.0.0.1:8080/
 * Chapter: book/java/blocking.md
 */
package iom.servers;

import iom.common.BlockingConnection;
import iom.common.Options;
import iom.common.Server;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;

public final class ThreadPerConnection {
    private ThreadPerConnection() {}

    public static void main(String[] args) {
        Options opts = Options.parse("java-thread", args);
        ServerSocket server = Server.listen(opts);
        Server.stopOnSignal(server);
        Server.ready(server.getLocalPort());

        // BEGIN accept-loop
        Thread.Builder connections = Thread.ofPlatform().name("conn-", 0).daemon();
        for (;;) {
            Socket socket;
            try {
                socket = server.accept();
            } catch (IOException e) {
                throw Server.halt("accept", e);
            }
            connections.start(() -> BlockingConnection.serve(socket, opts));
        }
        // END accept-loop
    }
}
