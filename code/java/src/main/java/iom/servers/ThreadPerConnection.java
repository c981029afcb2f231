/*
 * java-thread: thread per connection (a new platform thread for every accepted socket).
 *
 * The main thread blocks in accept() and starts a thread per connection, which blocks in
 * read(), does the request's work and writes, until the client leaves (or stays silent
 * for 2 s, --idle-timeout-s). Simple and concurrent, and each connection costs a kernel thread with its own
 * stack: book/java/results.md measures it against virtual threads and NIO. Twin of c-thread.
 * The accept loop is the one every blocking model shares (iom.common.BlockingServer).
 *
 * Build: make -C code java
 * Run:   $(code/tools/find-jdk)/bin/java -cp 'code/java/target/classes:code/java/target/lib/*' \
 *            iom.servers.ThreadPerConnection --port 8080 [--work-ms 20]
 * Try:   curl -s http://127.0.0.1:8080/
 * Chapter: book/java/blocking.md
 */
package iom.servers;

import iom.common.BlockingConnection;
import iom.common.BlockingServer;
import iom.common.Options;

public final class ThreadPerConnection {
    private ThreadPerConnection() {}

    public static void main(String[] args) throws InterruptedException {
        Options opts = Options.parse("java-thread", args);
        // BEGIN handoff
        Thread.Builder connections = Thread.ofPlatform().name("conn-", 0).daemon();
        BlockingServer.run(opts, socket -> connections.start(() -> BlockingConnection.serve(socket, opts)));
        // END handoff
    }
}
