package iom.rpc;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A provider (or the consumer) started as a child process, as the harness starts it: READY line
 * first, SIGTERM to stop, which must end it with exit status 0. Also the tests' raw clients: one
 * HTTP/1.1 exchange on a socket, and one length-prefixed frame.
 */
final class ProviderProcess implements AutoCloseable {
    final Process process;
    final int port;

    ProviderProcess(Class<?> main, String... args) throws IOException {
        String classpath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        String java = ProcessHandle.current().info().command().orElse(System.getProperty("java.home") + "/bin/java");
        List<String> command = new ArrayList<>(List.of(java, "-Xmx256m", "-cp", classpath, main.getName(), "--port", "0"));
        command.addAll(List.of(args));
        process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.US_ASCII));
        String line = out.readLine();
        if (line == null || !line.matches("READY port=\\d+")) {
            process.destroyForcibly();
            throw new IOException(main.getName() + " printed " + line + " instead of READY port=N");
        }
        port = Integer.parseInt(line.substring("READY port=".length()));
    }

    /** A connection with TCP_NODELAY, as the harness's generators use: no call waits for a delayed ACK. */
    Socket connect() throws IOException {
        Socket s = new Socket("127.0.0.1", port);
        s.setSoTimeout(10_000);
        s.setTcpNoDelay(true);
        return s;
    }

    /** An HTTP answer: status, headers (lower-case names) and body. */
    record Answer(int status, java.util.Map<String, String> headers, byte[] body) {
        String text() {
            return new String(body, StandardCharsets.UTF_8);
        }
    }

    /** POST / with a body on an open connection, and its answer (Content-Length or chunked). */
    static Answer post(Socket s, byte[] body) throws IOException {
        String head = "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: "
                + body.length + "\r\n\r\n";
        ByteArrayOutputStream request = new ByteArrayOutputStream();
        request.write(head.getBytes(StandardCharsets.US_ASCII));
        request.write(body);
        OutputStream o = s.getOutputStream();
        o.write(request.toByteArray()); // one write: head and body in one segment
        o.flush();
        return read(s.getInputStream());
    }

    /** A GET on an open connection, and its answer. */
    static Answer get(Socket s, String path) throws IOException {
        s.getOutputStream().write(("GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
        return read(s.getInputStream());
    }

    static Answer read(InputStream in) throws IOException {
        String status = line(in);
        if (status == null) {
            throw new IOException("the connection closed before an answer");
        }
        java.util.Map<String, String> headers = new java.util.HashMap<>();
        for (String h; !(h = line(in)).isEmpty(); ) {
            int colon = h.indexOf(':');
            headers.put(h.substring(0, colon).trim().toLowerCase(java.util.Locale.ROOT), h.substring(colon + 1).trim());
        }
        byte[] body;
        if (headers.containsKey("content-length")) {
            body = in.readNBytes(Integer.parseInt(headers.get("content-length")));
        } else if ("chunked".equalsIgnoreCase(headers.get("transfer-encoding"))) {
            ByteArrayOutputStream all = new ByteArrayOutputStream();
            for (int n; (n = Integer.parseInt(line(in).trim(), 16)) > 0; ) {
                all.write(in.readNBytes(n));
                line(in);
            }
            line(in);
            body = all.toByteArray();
        } else {
            body = in.readAllBytes();
        }
        return new Answer(Integer.parseInt(status.split(" ")[1]), headers, body);
    }

    private static String line(InputStream in) throws IOException {
        StringBuilder b = new StringBuilder();
        for (int c; (c = in.read()) != '\n'; ) {
            if (c < 0) {
                return b.length() == 0 ? null : b.toString();
            }
            if (c != '\r') {
                b.append((char) c);
            }
        }
        return b.toString();
    }

    /** One length-prefixed frame out, one back. */
    static byte[] frame(Socket s, byte[] payload) throws IOException {
        ByteArrayOutputStream request = new ByteArrayOutputStream();
        DataOutputStream o = new DataOutputStream(request);
        o.writeInt(payload.length);
        o.write(payload);
        s.getOutputStream().write(request.toByteArray()); // one write: length and payload in one segment
        DataInputStream in = new DataInputStream(s.getInputStream());
        return in.readNBytes(in.readInt());
    }

    /** SIGTERM, then the contract's exit status 0. */
    @Override
    public void close() {
        process.destroy();
        try {
            if (!process.waitFor(20, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new AssertionError("still running 20 s after SIGTERM");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.destroyForcibly();
            throw new AssertionError("interrupted while waiting for the provider to stop", e);
        }
        assertEquals(0, process.exitValue(), "exit status after SIGTERM");
    }
}
