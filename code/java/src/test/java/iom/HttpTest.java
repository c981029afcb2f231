package iom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import iom.common.Http;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The parser decides as code/c/common/http.c does. */
class HttpTest {
    static int parse(String s) {
        byte[] b = s.getBytes(StandardCharsets.ISO_8859_1);
        return Http.parse(b, 0, b.length);
    }

    @Test
    void completeRequestsAndKeepAlive() {
        String get = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
        int r = parse(get + "GET /next");
        assertEquals(get.length(), Http.length(r));
        assertTrue(Http.keepAlive(r));
        assertFalse(Http.keepAlive(parse("GET / HTTP/1.1\r\nConnection: Keep-Alive, CLOSE\r\n\r\n")));
        assertFalse(Http.keepAlive(parse("GET / HTTP/1.0\r\n\r\n")));
        assertTrue(Http.keepAlive(parse("GET / HTTP/1.0\r\nconnection:  keep-alive \r\n\r\n")));
        assertTrue(Http.keepAlive(parse("GET / HTTP/1.1\r\nContent-Length: 0\r\n\r\n")));
    }

    @Test
    void incompleteAndTooLarge() {
        assertEquals(Http.INCOMPLETE, parse(""));
        assertEquals(Http.INCOMPLETE, parse("GET / HTTP/1.1\r\nHost: x\r\n"));
        assertEquals(Http.TOO_LARGE, parse("GET / HTTP/1.1\r\nX: " + "x".repeat(Http.MAX_REQUEST)));
        String fits = "GET / HTTP/1.1\r\nX: " + "x".repeat(Http.MAX_REQUEST - 23) + "\r\n\r\n";
        assertEquals(Http.MAX_REQUEST, fits.length());
        assertEquals(Http.MAX_REQUEST, Http.length(parse(fits)));
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "THIS IS NOT HTTP\r\n\r\n", "GET / HTTP/2.0\r\n\r\n", "GET  / HTTP/1.1\r\n\r\n", "GET /\r\n\r\n",
        "GET / HTTP/1.1\r\nNo colon\r\n\r\n", "GET / HTTP/1.1\r\n folded: x\r\n\r\n",
        "GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", "GET / HTTP/1.1\r\nContent-Length: 5\r\n\r\n",
        "GET / HTTP/1.1\nHost: x\r\n\r\n", "G(T / HTTP/1.1\r\n\r\n",
    })
    void malformedIsBad(String request) {
        assertEquals(Http.BAD, parse(request));
        assertTrue(Http.closeAfter(Http.BAD));
    }
}
