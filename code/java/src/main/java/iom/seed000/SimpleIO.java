/*
 * java-seed000-blocking: the source write-up's "阻塞IO" (blocking IO) server AS PUBLISHED
 * (seed 000, ../shared/seeds/000_*.txt), kept to reproduce its numbers; not a book server.
 *
 * What it does, faithfully: one connection at a time; it never reads the request; it
 * sleeps 20 ms, writes "HTTP/1.1 200" and three more lines through a PrintWriter with
 * autoflush (one write per println, "\n" line ends, no reason phrase, Content-Length
 * without a space) and closes. Closing a socket with the unread request still in its
 * receive buffer makes Linux send a reset instead of a FIN: wrk counts those as read
 * errors. The only changes are marked "added:" (see Harness): --port, --work-ms, READY,
 * exit 0 on SIGTERM. The corrected server is java-blocking (iom.servers.Blocking).
 *
 * Build: make -C code java
 * Run:   $(code/tools/find-jdk)/bin/java -cp 'code/java/target/classes:code/java/target/lib/*' \
 *            iom.seed000.SimpleIO --port 9001
 * Chapter: book/java/reproduce-000.md
 */
package iom.seed000;

import java.io.IOException;
import java.io.PrintWriter;
import java.net.ServerSocket;
import java.net.Socket;

// BEGIN simple-io
public class SimpleIO {
    public static void main(String[] args) throws IOException {
        Harness.parse(args); // added: --port, --work-ms, exit 0 on SIGTERM
        try (ServerSocket serverSocket = new ServerSocket(Harness.port, 50, Harness.LOOPBACK)) { // was: new ServerSocket(9001); added: loopback only, backlog 50 is Java's default
            Harness.ready(serverSocket.getLocalSocketAddress()); // added: READY port=N
            while (true) {
                final Socket socket = serverSocket.accept();
                socketHandle(socket);
            }
        }
    }

    private static void socketHandle(Socket socket) {
        try {
            Thread.sleep(Harness.work); // was: Thread.sleep(20)

            PrintWriter out = new PrintWriter(socket.getOutputStream(), true);
            String pageInfo="hello,lehman";
            out.println("HTTP/1.1 200");
            out.println("Content-Type: text/html");
            out.println("Content-Length:"+pageInfo.length());
            out.println();
            out.write(pageInfo);

            out.close();
            socket.close();
        } catch (IOException | InterruptedException exception) {
            exception.printStackTrace();
        }
    }
}
// END simple-io
