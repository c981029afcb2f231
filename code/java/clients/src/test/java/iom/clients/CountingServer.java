package iom.clients;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The clients' tests' server, one per test class (a static {@code @RegisterExtension} field): the
 * JDK's HttpServer on the loopback address, with TCP_NODELAY, that counts the requests it holds
 * (and the most it held at once, {@link #peak}) and answers each as the test's {@link Handler}
 * says. Before each test it waits for the requests a client gave up on, which may still sleep in
 * it, to end.
 */
final class CountingServer implements BeforeAllCallback, AfterAllCallback, BeforeEachCallback {
    /** What a request is answered with. */
    record Answer(int status, byte[] body) {}

    /** The test's part: records what it wants of the request, waits as it asks, and says the answer. */
    @FunctionalInterface
    interface Handler {
        Answer answer(HttpExchange x) throws InterruptedException;
    }

    /** The most requests the server held at once; a test resets it. */
    final AtomicInteger peak = new AtomicInteger();
    private final AtomicInteger inFlight = new AtomicInteger();
    private final Handler handler;
    private HttpServer server;

    CountingServer(Handler handler) {
        this.handler = handler;
    }

    @Override
    public void beforeAll(ExtensionContext context) throws IOException {
        System.setProperty("sun.net.httpserver.nodelay", "true");
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 1024);
        server.setExecutor(Executors.newCachedThreadPool());
        server.createContext("/", this::serve);
        server.start();
    }

    @Override
    public void afterAll(ExtensionContext context) {
        server.stop(0);
    }

    /** A request a client gave up on may still sleep in the server: let it end before counting. */
    @Override
    public void beforeEach(ExtensionContext context) throws InterruptedException {
        for (int i = 0; i < 300 && inFlight.get() > 0; i++) {
            Thread.sleep(10);
        }
        assertEquals(0, inFlight.get(), "the server still holds requests");
    }

    /** This server's URL of {@code pathAndQuery}, which starts with "/". */
    String url(String pathAndQuery) {
        return "http://127.0.0.1:" + server.getAddress().getPort() + pathAndQuery;
    }

    private void serve(HttpExchange x) throws IOException {
        peak.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
        boolean answered = false;
        try {
            Answer a = handler.answer(x);
            // the request stops counting as its answer starts: the client may send its next request on this
            // connection as soon as it has read the answer, before this thread is back in `finally`
            answered = true;
            inFlight.decrementAndGet();
            x.sendResponseHeaders(a.status(), a.body().length);
            try (OutputStream out = x.getResponseBody()) {
                out.write(a.body());
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            if (!answered) {
                inFlight.decrementAndGet();
            }
        }
    }
}
