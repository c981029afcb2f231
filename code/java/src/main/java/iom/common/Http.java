package iom.common;

import java.nio.charset.StandardCharsets;

/**
 * The one HTTP/1.x request parser and the response bytes every Java server shares: a port of
 * code/c/common/http.c, byte for byte the same decisions and the same responses
 * (iobench.http.RESPONSE_KEEP_ALIVE / RESPONSE_CLOSE).
 *
 * {@link #parse} is a pure function over bytes. It finds one complete request (request line and
 * headers, up to the empty line), checks it, and returns an int: {@link #INCOMPLETE},
 * {@link #BAD} (answer 400 and close), {@link #TOO_LARGE} (431 and close), or a positive value
 * that packs the request's length and its keep-alive flag ({@link #length}, {@link #keepAlive}),
 * so that the hot path allocates nothing. Request bodies are not supported: a request that
 * announces one is rejected.
 */
public final class Http {
    private Http() {}

    public static final int MAX_REQUEST = 8192; // request line + headers; larger requests get a 431
    public static final int INCOMPLETE = 0, BAD = -1, TOO_LARGE = -2;

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    /** The contract's body: what GET / answers. */
    public static final String BODY = "Hello, world\n";
    public static final byte[] RESPONSE_KEEP_ALIVE = ascii("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
            + "Content-Length: 13\r\nConnection: keep-alive\r\n\r\n" + BODY);
    public static final byte[] RESPONSE_CLOSE = ascii("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
            + "Content-Length: 13\r\nConnection: close\r\n\r\n" + BODY);
    public static final byte[] RESPONSE_400 = ascii("HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\n"
            + "Content-Length: 12\r\nConnection: close\r\n\r\nBad Request\n");
    public static final byte[] RESPONSE_431 = ascii("HTTP/1.1 431 Request Header Fields Too Large\r\n"
            + "Content-Type: text/plain\r\nContent-Length: 16\r\nConnection: close\r\n\r\nHeader Too Large\n");

    /** Bytes of the buffer a complete request used. */
    public static int length(int parsed) {
        return parsed >>> 1;
    }

    /** Does the connection stay open after this complete request's response? */
    public static boolean keepAlive(int parsed) {
        return (parsed & 1) != 0;
    }

    /** Must the connection close once the response to this parse result is out? */
    public static boolean closeAfter(int parsed) {
        return parsed < 0 || !keepAlive(parsed);
    }

    /** The response to a parse result other than INCOMPLETE. */
    public static byte[] response(int parsed) {
        if (parsed == TOO_LARGE) {
            return RESPONSE_431;
        }
        if (parsed < 0) {
            return RESPONSE_400;
        }
        return keepAlive(parsed) ? RESPONSE_KEEP_ALIVE : RESPONSE_CLOSE;
    }

    /** RFC 9110 token characters (methods and header names). */
    private static boolean isTchar(int c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                || (c != 0 && "!#$%&'*+-.^_`|~".indexOf(c) >= 0);
    }

    private static int indexOf(byte[] b, int from, int to, byte x) {
        for (int i = from; i < to; i++) {
            if (b[i] == x) {
                return i;
            }
        }
        return -1;
    }

    private static boolean equalsIgnoreCase(byte[] b, int from, int len, String s) {
        if (len != s.length()) {
            return false;
        }
        for (int i = 0; i < len; i++) {
            int c = b[from + i];
            if (c >= 'A' && c <= 'Z') {
                c += 'a' - 'A';
            }
            if (c != s.charAt(i)) { // s is lower case
                return false;
            }
        }
        return true;
    }

    /** Does the comma-separated header value b[v, v+n) contain the token tok (any case)? */
    private static boolean hasToken(byte[] b, int v, int n, String tok) {
        int end = v + n;
        for (int i = v; i < end; ) {
            while (i < end && (b[i] == ' ' || b[i] == '\t' || b[i] == ',')) {
                i++;
            }
            int start = i;
            while (i < end && b[i] != ',') {
                i++;
            }
            int e = i;
            while (e > start && (b[e - 1] == ' ' || b[e - 1] == '\t')) {
                e--;
            }
            if (equalsIgnoreCase(b, start, e - start, tok)) {
                return true;
            }
        }
        return false;
    }

    /** The request line b[p, eol): METHOD SP TARGET SP HTTP/1.x; returns x, or -1. */
    private static int requestLine(byte[] b, int p, int eol) {
        int q = p;
        while (q < eol && isTchar(b[q] & 0xff)) {
            q++;
        }
        if (q == p || q >= eol || b[q] != ' ') {
            return -1;
        }
        int target = ++q;
        while (q < eol && b[q] != ' ' && (b[q] & 0xff) > ' ' && b[q] != 0x7f) {
            q++;
        }
        if (q == target || q >= eol || b[q] != ' ') {
            return -1;
        }
        q++;
        if (eol - q != 8 || b[q] != 'H' || b[q + 1] != 'T' || b[q + 2] != 'T' || b[q + 3] != 'P'
                || b[q + 4] != '/' || b[q + 5] != '1' || b[q + 6] != '.' || (b[q + 7] != '0' && b[q + 7] != '1')) {
            return -1;
        }
        return b[q + 7] - '0';
    }

    // BEGIN parse
    /** Parse one request from b[off, off+len): INCOMPLETE, BAD, TOO_LARGE, or a complete request. */
    public static int parse(byte[] b, int off, int len) {
        int scan = Math.min(len, MAX_REQUEST);
        int end = -1; // just past "\r\n\r\n"
        for (int i = off + 3; i < off + scan; i++) {
            if (b[i] == '\n' && b[i - 1] == '\r' && b[i - 2] == '\n' && b[i - 3] == '\r') {
                end = i + 1;
                break;
            }
        }
        if (end < 0) {
            return len >= MAX_REQUEST ? TOO_LARGE : INCOMPLETE;
        }
        int stop = end - 2; // the final empty line's \r\n
        int eol = indexOf(b, off, stop, (byte) '\r');
        if (eol < 0 || b[eol + 1] != '\n') {
            return BAD;
        }
        int minor = requestLine(b, off, eol);
        if (minor < 0) {
            return BAD;
        }
        boolean close = false, keep = false;
        for (int p = eol + 2; p < stop; p = eol + 2) {
            eol = indexOf(b, p, stop, (byte) '\r');
            if (eol < 0 || b[eol + 1] != '\n') {
                return BAD;
            }
            int colon = p;
            while (colon < eol && isTchar(b[colon] & 0xff)) {
                colon++;
            }
            if (colon == p || colon >= eol || b[colon] != ':') {
                return BAD; // also rejects obsolete line folding
            }
            int v = colon + 1, vlen = eol - v;
            if (equalsIgnoreCase(b, p, colon - p, "connection")) {
                close |= hasToken(b, v, vlen, "close");
                keep |= hasToken(b, v, vlen, "keep-alive");
            } else if (equalsIgnoreCase(b, p, colon - p, "transfer-encoding")) {
                return BAD; // no request bodies
            } else if (equalsIgnoreCase(b, p, colon - p, "content-length")) {
                while (vlen > 0 && (b[v] == ' ' || b[v] == '\t')) {
                    v++;
                    vlen--;
                }
                while (vlen > 0 && (b[v + vlen - 1] == ' ' || b[v + vlen - 1] == '\t')) {
                    vlen--;
                }
                if (vlen != 1 || b[v] != '0') {
                    return BAD;
                }
            }
        }
        boolean keepAlive = minor == 1 ? !close : keep && !close;
        return (end - off) << 1 | (keepAlive ? 1 : 0);
    }
    // END parse
}
