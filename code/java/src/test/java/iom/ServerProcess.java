package iom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A server started as a child process, as the harness starts it: READY line first, SIGTERM to stop.
 * Public for the tests of other packages (iom.echo).
 */
public final class ServerProcess implements AutoCloseable {
    public final Process process;
    public final int port;

    /** On a given classpath: {@link #classpath}, or one's own (iom.echo runs MinaEcho on mina-core 2.0.7 too). */
    public ServerProcess(String classpath, String mainClass, List<String> args) throws IOException {
        List<String> command = new ArrayList<>(List.of(java(), "-Xmx128m", "-cp", classpath, mainClass, "--port", "0"));
        command.addAll(args);
        process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.US_ASCII));
        String line = out.readLine();
        if (line == null || !line.matches("READY port=\\d+")) {
            process.destroyForcibly();
            throw new IOException(mainClass + " printed " + line + " instead of READY port=N");
        }
        port = Integer.parseInt(line.substring("READY port=".length()));
        assertTrue(port > 0);
    }

    /** The tests' classpath: target/classes, target/test-classes and every dependency. */
    public static String classpath() {
        return System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    }

    /** The java that runs the tests. */
    public static String java() {
        return ProcessHandle.current().info().command().orElse(System.getProperty("java.home") + "/bin/java");
    }

    public Socket connect() throws IOException {
        Socket s = new Socket("127.0.0.1", port);
        s.setSoTimeout(10_000);
        return s;
    }

    /** Read until the peer closes (or resets after its last byte); no close within the timeout fails. */
    static byte[] readToEnd(Socket s) throws IOException {
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        InputStream in = s.getInputStream();
        byte[] buf = new byte[4096];
        try {
            for (int n; (n = in.read(buf)) > 0; ) {
                all.write(buf, 0, n);
            }
        } catch (SocketTimeoutException e) {
            throw new AssertionError("the server did not close the connection (" + all.size() + " bytes came)", e);
        } catch (IOException e) {
            if (all.size() == 0) {
                throw e;
            }
        }
        return all.toByteArray();
    }

    /** Read exactly n bytes. */
    public static byte[] readExactly(Socket s, int n) throws IOException {
        byte[] b = s.getInputStream().readNBytes(n);
        assertEquals(n, b.length, "the server closed early");
        return b;
    }

    static void send(Socket s, String request) throws IOException {
        OutputStream out = s.getOutputStream();
        out.write(request.getBytes(StandardCharsets.US_ASCII));
        out.flush();
    }

    /** SIGTERM (Process.destroy on Linux), then the contract's exit status 0. */
    @Override
    public void close() throws InterruptedException {
        process.destroy();
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new AssertionError("still running 10 s after SIGTERM");
        }
        assertEquals(0, process.exitValue(), "exit status after SIGTERM");
    }
}
