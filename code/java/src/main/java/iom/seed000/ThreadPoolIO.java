/*
 * java-seed000-threadpool: the source write-up's "伪异步" (pseudo-async) server AS PUBLISHED
 * (seed 000, ../shared/seeds/000_*.txt), kept to reproduce its numbers; not a book server.
 *
 * What it does, faithfully: the main thread accepts and gives each socket to
 * Executors.newFixedThreadPool(40) (unbounded queue); a pool thread never reads the
 * request, sleeps 20 ms, writes the write-up's bytes (one write per println, "\n" line
 * ends) and closes, so every connection serves exactly one response and, with the request
 * unread, ends in a reset: the write-up's 46647 read errors. Changes are marked "added:"
 * (see Harness): --port, --work-ms, READY, exit 0 on SIGTERM. The corrected server is
 * java-threadpool (iom.servers.ThreadPool).
 *
 * Build: make -C code java
 * Run:   $(code/tools/find-jdk)/bin/java -cp 'code/java/target/classes:code/java/target/lib/*' \
 *            iom.seed000.ThreadPoolIO --port 9003
 * Chapter: book/java/reproduce-000.md
 */
package iom.seed000;

import java.io.IOException;
import java.io.PrintWriter;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

// BEGIN thread-pool-io
public class ThreadPoolIO {
    public static void main(String[] args) throws IOException {
        Harness.parse(args); // added: --port, --work-ms, exit 0 on SIGTERM
        ExecutorService executorService = Executors.newFixedThreadPool(40);
        try (ServerSocket serverSocket = new ServerSocket(Harness.port, 50, Harness.LOOPBACK)) { // was: new ServerSocket(9003); added: loopback only, backlog 50 is Java's default
            Harness.ready(serverSocket.getLocalSocketAddress()); // added: READY port=N
            while (true) {
                final Socket socket = serverSocket.accept();
                executorService.execute(() -> {
                    socketHandle(socket);
                });
            }
        }
    }

    private static void socketHandle(Socket socket) {
        try {
            Thread.sleep(Harness.work); // was: Thread.sleep(20)
            PrintWriter out = new PrintWriter(socket.getOutputStream(), true);
            String pageInfo = "hello,lehman";
            out.println("HTTP/1.1 200");
            out.println("Content-Type: text/html");
            out.println("Content-Length:" + pageInfo.length());
            out.println();
            out.write(pageInfo);

            out.close();
            socket.close();
        } catch (IOException | InterruptedException exception) {
            exception.printStackTrace();
        }
    }
}
// END thread-pool-io
