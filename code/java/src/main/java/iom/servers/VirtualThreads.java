/*
 * java-vthread: one virtual thread per connection (JEP 444, JDK 21), plain blocking code.
 *
 * The code is java-thread's, with Thread.ofVirtual() instead of Thread.ofPlatform(): each
 * connection gets a virtual thread that blocks in read(), sleeps through its work and
 * writes. A blocked virtual thread unmounts from its carrier (a small ForkJoinPool, one
 * carrier per core) and the JDK waits for its socket with epoll underneath: thread-per-
 * connection code with an event loop's cost per connection. Idle connections close after 2 s
 * (--idle-timeout-s).
 * The accept loop is the one every blocking model shares (iom.common.BlockingServer).
 *
 * Build: make -C code java
 * Run:   $(code/tools/find-jdk)/bin/java -cp 'code/java/target/classes:code/java/target/lib/*' \
 *            iom.servers.VirtualThreads --port 8080 [--work-ms 20]
 * Try:   curl -s http://127.0.0.1:8080/
 * Chapter: book/java/blocking.md
 */
package iom.servers;

import iom.common.BlockingConnection;
import iom.common.BlockingServer;
import iom.common.Options;

public final class VirtualThreads {
    private VirtualThreads() {}

    public static void main(String[] args) throws InterruptedException {
        Options opts = Options.parse("java-vthread", args);
        // BEGIN handoff
        Thread.Builder connections = Thread.ofVirtual().name("conn-", 0);
        BlockingServer.run(opts, socket -> connections.start(() -> BlockingConnection.serve(socket, opts)));
        // END handoff
    }
}
