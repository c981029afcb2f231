// What the Java pages' exercises share (book/java/blocking, nio, frameworks): start one of the book's
// servers as `code/bin/iobench serve` starts it, pinned to CPU 0, and time how long clients wait.
//
// In a Java page, after IoBench.java:   %load ../../code/java/tools/Exercises.java
//   try (Served srv = serve("java-threadpool", "--pool", "4", "--work-ms", "200")) {
//       long[] ms = answered(srv, 8, true);   // 8 clients, one request each at the same moment
//   }
// serve(id, flags...) takes the contract's flags (--pool, --work-ms, --idle-timeout-s, ...) and stops the
// server when its try block ends; answered(srv, n, keepAlive) returns each client's wait in milliseconds.
import java.io.*;
import java.net.*;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.*;
import java.util.concurrent.*;

/** A server of the book, started as `iobench serve` starts it; close() stops it (SIGTERM to the harness). */
record Served(String id, Process harness, int port) implements AutoCloseable {
    /** The server's own JVM: the harness's child process. */
    ProcessHandle server() {
        return harness.toHandle().descendants()
                .filter(p -> p.info().command().orElse("").endsWith("/java")).findFirst().orElseThrow();
    }

    public void close() throws InterruptedException {
        harness.destroy();
        harness.waitFor(20, TimeUnit.SECONDS);
    }
}

Served serve(String id, String... flags) throws IOException {
    Path root = IoBench.root();
    List<String> command = new ArrayList<>(List.of(root.resolve("code/bin/iobench").toString(), "serve", id, "--cpus", "0"));
    command.addAll(List.of(flags));
    Process p = new ProcessBuilder(command).directory(root.toFile()).redirectErrorStream(true).start();
    var out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
    var said = new StringBuilder();
    for (String line; (line = out.readLine()) != null; said.append(line).append('\n')) {
        if (line.startsWith("READY port=")) {
            return new Served(id, p, Integer.parseInt(line.substring("READY port=".length()).trim()));
        }
    }
    throw new IllegalStateException("iobench serve " + id + " ended before READY:\n" + said);
}

/** Read one answer: its head, then Content-Length bytes of body; return its status line. */
String readAnswer(InputStream in) throws IOException {
    var head = new ByteArrayOutputStream();
    while (!head.toString(StandardCharsets.US_ASCII).endsWith("\r\n\r\n")) {
        int b = in.read();
        if (b < 0) {
            throw new EOFException("closed before an answer");
        }
        head.write(b);
    }
    String h = head.toString(StandardCharsets.US_ASCII);
    var length = java.util.regex.Pattern.compile("(?i)content-length:\\s*(\\d+)").matcher(h);
    in.readNBytes(length.find() ? Integer.parseInt(length.group(1)) : 0);
    return h.lines().findFirst().orElse("");
}

/** n clients connect, then each sends one request at the same moment: the milliseconds until each was
 *  answered, in the clients' order. keepAlive: every connection stays open until all are answered. */
long[] answered(Served srv, int n, boolean keepAlive) throws Exception {
    byte[] request = ("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n" + (keepAlive ? "" : "Connection: close\r\n") + "\r\n")
            .getBytes(StandardCharsets.US_ASCII);
    var sockets = new ArrayList<Socket>();
    try {
        for (int i = 0; i < n; i++) {
            Socket s = new Socket("127.0.0.1", srv.port());
            s.setSoTimeout(30_000);
            sockets.add(s);
        }
        var go = new CountDownLatch(1);
        var clients = new ArrayList<Future<Long>>();
        try (ExecutorService pool = Executors.newFixedThreadPool(n)) {
            for (Socket s : sockets) {
                clients.add(pool.submit(() -> {
                    go.await();
                    s.getOutputStream().write(request);
                    String status = readAnswer(s.getInputStream());
                    if (!status.startsWith("HTTP/1.1 200")) {
                        throw new IllegalStateException(status);
                    }
                    return System.nanoTime();
                }));
            }
            long t0 = System.nanoTime();
            go.countDown();
            long[] ms = new long[n];
            for (int i = 0; i < n; i++) {
                ms[i] = (clients.get(i).get() - t0) / 1_000_000;
            }
            return ms;
        }
    } finally {
        for (Socket s : sockets) {
            s.close();
        }
    }
}
