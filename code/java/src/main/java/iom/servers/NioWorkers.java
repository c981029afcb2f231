/*
 * java-nio-workers: Lea's Reactor with a worker pool ("Handler with Thread Pool").
 *
 * The same reactor, acceptor and handler as java-nio, with one difference: a handler that
 * has a complete request gives it to a worker pool (--pool, default 64) and stops reading
 * that connection; the worker does the request's work (--work-ms sleeps there, not on the
 * reactor) and hands the response back through the reactor's task queue, with a wakeup of
 * its Selector. The reactor thread only does IO, so 40 connections with 20 ms of work each
 * overlap: up to 2000 req/s. See iom.common.NioHandler, "handoff".
 *
 * Build: make -C code java
 * Run:   $(code/tools/find-jdk)/bin/java -cp 'code/java/target/classes:code/java/target/lib/*' \
 *            iom.servers.NioWorkers --port 8080 [--pool 64] [--work-ms 20]
 * Try:   curl -s http://127.0.0.1:8080/
 * Chapter: book/java/nio.md
 */
package iom.servers;

import iom.common.Options;
import java.io.IOException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

public final class NioWorkers {
    private NioWorkers() {}

    static final int DEFAULT_POOL = 64;

    public static void main(String[] args) throws IOException {
        Options opts = Options.parse("java-nio-workers", args);
        // BEGIN workers
        ExecutorService workers = Executors.newFixedThreadPool(opts.pool(DEFAULT_POOL),
                Thread.ofPlatform().name("worker-", 0).daemon().factory());
        NioReactor.serve(opts, workers);
        // END workers
    }
}
