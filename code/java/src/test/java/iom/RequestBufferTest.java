package iom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import iom.common.Http;
import iom.common.RequestBuffer;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** In process: how the non-blocking servers keep a connection's request bytes between reads. */
class RequestBufferTest {
    static final String GET = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    static final String GET_CLOSE = "GET / HTTP/1.1\r\nConnection: close\r\n\r\n";

    static int put(RequestBuffer requests, String s) {
        return requests.put(ByteBuffer.wrap(s.getBytes(StandardCharsets.US_ASCII)));
    }

    @Test
    void aRequestInPiecesComesOutWhole() {
        RequestBuffer requests = new RequestBuffer();
        put(requests, GET.substring(0, 10));
        assertEquals(Http.INCOMPLETE, requests.next());
        assertEquals(0, requests.batch().length);
        put(requests, GET.substring(10) + "GET /next");
        int parsed = requests.next();
        assertEquals(GET.length(), Http.length(parsed));
        assertEquals("GET /next".length(), requests.in().position(), "the next request's start stays");
    }

    @Test
    void aBatchEndsWithTheRequestThatCloses() {
        RequestBuffer requests = new RequestBuffer();
        put(requests, GET + GET + GET_CLOSE + GET);
        int[] batch = requests.batch();
        assertEquals(3, batch.length);
        assertTrue(Http.keepAlive(batch[0]) && Http.keepAlive(batch[1]) && !Http.keepAlive(batch[2]));
        assertEquals(GET.length(), requests.in().position(), "what follows the close is left alone");
    }

    @Test
    void aBadRequestEndsTheBatch() {
        RequestBuffer requests = new RequestBuffer();
        put(requests, GET + "NOT HTTP\r\n\r\n" + GET);
        int[] batch = requests.batch();
        assertEquals(2, batch.length);
        assertEquals(Http.BAD, batch[1]);
        assertTrue(Http.closeAfter(batch[1]));
    }

    @Test
    void itHoldsAtMostOneMaximalRequest() {
        RequestBuffer requests = new RequestBuffer();
        String big = "GET / HTTP/1.1\r\nX: " + "x".repeat(2 * Http.MAX_REQUEST);
        ByteBuffer src = ByteBuffer.wrap(big.getBytes(StandardCharsets.US_ASCII));
        assertEquals(Http.MAX_REQUEST, requests.put(src), "bytes taken");
        assertEquals(big.length() - Http.MAX_REQUEST, src.remaining(), "the rest stays in the source");
        assertEquals(0, requests.put(src), "full");
        assertArrayEquals(new int[] {Http.TOO_LARGE}, requests.batch());
    }
}
