/*
 * java-blocking: blocking IO, one connection at a time (java.net.ServerSocket and Socket).
 *
 * The main thread blocks in accept(), then in read() and write() for that one client until
 * it is done; every other client waits in the kernel's listen queue meanwhile. A client that
 * sends nothing is dropped after 2 s (--idle-timeout-s), or it would stop the server. The Java twin of
 * c-sequential, and the corrected form of the source write-up's SimpleIO (iom.seed000).
 * The accept loop is the one every blocking model shares (iom.common.BlockingServer).
 *
 * Build: make -C code java
 * Run:   $(code/tools/find-jdk)/bin/java -cp 'code/java/target/classes:code/java/target/lib/*' \
 *            iom.servers.Blocking --port 8080 [--work-ms 20]
 * Try:   curl -s http://127.0.0.1:8080/
 * Chapter: book/java/blocking.md
 */
package iom.servers;

import iom.common.BlockingConnection;
import iom.common.BlockingServer;
import iom.common.Options;

public final class Blocking {
    private Blocking() {}

    public static void main(String[] args) throws InterruptedException {
        Options opts = Options.parse("java-blocking", args);
        // BEGIN handoff
        // the main thread serves each connection itself: everyone else waits until it returns
        BlockingServer.run(opts, socket -> BlockingConnection.serve(socket, opts));
        // END handoff
    }
}
