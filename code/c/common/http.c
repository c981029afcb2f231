/*
 * http.c: see http.h. Shared by every C server and fuzzed by fuzz_http.c.
 */
#include "http.h"

#include <string.h>
#include <strings.h>

#define BODY "Hello, world\n"
#define HEAD(conn) "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\nConnection: " conn "\r\n\r\n"

static const char RESPONSE_KEEP_ALIVE[] = HEAD("keep-alive") BODY;
static const char RESPONSE_CLOSE[] = HEAD("close") BODY;
static const char RESPONSE_400[] =
    "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: 12\r\n"
    "Connection: close\r\n\r\nBad Request\n";
static const char RESPONSE_431[] =
    "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: text/plain\r\n"
    "Content-Length: 16\r\nConnection: close\r\n\r\nHeader Too Large\n";

const char *http_response(int keep_alive, size_t *len)
{
    if (keep_alive) {
        *len = sizeof RESPONSE_KEEP_ALIVE - 1;
        return RESPONSE_KEEP_ALIVE;
    }
    *len = sizeof RESPONSE_CLOSE - 1;
    return RESPONSE_CLOSE;
}

const char *http_error_response(enum http_status status, size_t *len)
{
    if (status == HTTP_TOO_LARGE) {
        *len = sizeof RESPONSE_431 - 1;
        return RESPONSE_431;
    }
    *len = sizeof RESPONSE_400 - 1;
    return RESPONSE_400;
}

/* RFC 9110 token characters (methods and header names). */
static int is_tchar(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* Find "\r\n\r\n" in buf[0..len); return the offset just past it, or 0. */
static size_t find_end(const char *buf, size_t len)
{
    for (size_t i = 3; i < len; i++)
        if (buf[i] == '\n' && buf[i - 1] == '\r' && buf[i - 2] == '\n' && buf[i - 3] == '\r')
            return i + 1;
    return 0;
}

/* Does the comma-separated header value [v, v+n) contain the token tok (any case)? */
static int has_token(const char *v, size_t n, const char *tok)
{
    size_t t = strlen(tok);
    for (size_t i = 0; i < n;) {
        while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
            i++;
        size_t start = i;
        while (i < n && v[i] != ',')
            i++;
        size_t end = i;
        while (end > start && (v[end - 1] == ' ' || v[end - 1] == '\t'))
            end--;
        if (end - start == t && strncasecmp(v + start, tok, t) == 0)
            return 1;
    }
    return 0;
}

/* Parse the request line [p, eol): METHOD SP TARGET SP HTTP/1.x; return x or -1, and where TARGET is. */
static int parse_request_line(const char *p, const char *eol, const char **target_at, size_t *target_len)
{
    const char *q = p;
    while (q < eol && is_tchar((unsigned char)*q))
        q++;
    if (q == p || q >= eol || *q != ' ')
        return -1;
    const char *target = ++q;
    while (q < eol && *q != ' ' && (unsigned char)*q > ' ' && *q != 0x7f)
        q++;
    if (q == target || q >= eol || *q != ' ')
        return -1;
    *target_at = target;
    *target_len = (size_t)(q - target);
    q++;
    if (eol - q != 8 || memcmp(q, "HTTP/1.", 7) != 0 || (q[7] != '0' && q[7] != '1'))
        return -1;
    return q[7] - '0';
}

enum http_status http_parse(const char *buf, size_t len, struct http_request *req)
{
    size_t scan = len < HTTP_MAX_REQUEST ? len : HTTP_MAX_REQUEST;
    size_t end = find_end(buf, scan);
    if (end == 0)
        return len >= HTTP_MAX_REQUEST ? HTTP_TOO_LARGE : HTTP_INCOMPLETE;

    const char *p = buf, *stop = buf + end - 2; /* stop: the final empty line's \r\n */
    const char *eol = memchr(p, '\r', (size_t)(stop - p));
    if (eol == NULL || eol[1] != '\n')
        return HTTP_BAD;
    const char *target = NULL;
    size_t target_len = 0;
    int minor = parse_request_line(p, eol, &target, &target_len);
    if (minor < 0)
        return HTTP_BAD;

    int close = 0, keep = 0;
    for (p = eol + 2; p < stop; p = eol + 2) {
        eol = memchr(p, '\r', (size_t)(stop - p));
        if (eol == NULL || eol[1] != '\n')
            return HTTP_BAD;
        const char *colon = p;
        while (colon < eol && is_tchar((unsigned char)*colon))
            colon++;
        if (colon == p || colon >= eol || *colon != ':')
            return HTTP_BAD; /* also rejects obsolete line folding */
        size_t name_len = (size_t)(colon - p);
        const char *v = colon + 1;
        size_t vlen = (size_t)(eol - v);
        if (name_len == 10 && strncasecmp(p, "connection", 10) == 0) {
            close |= has_token(v, vlen, "close");
            keep |= has_token(v, vlen, "keep-alive");
        } else if (name_len == 17 && strncasecmp(p, "transfer-encoding", 17) == 0) {
            return HTTP_BAD; /* no request bodies */
        } else if (name_len == 14 && strncasecmp(p, "content-length", 14) == 0) {
            while (vlen > 0 && (*v == ' ' || *v == '\t'))
                v++, vlen--;
            while (vlen > 0 && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
                vlen--;
            if (vlen != 1 || *v != '0')
                return HTTP_BAD;
        }
    }
    req->length = end;
    req->target = (size_t)(target - buf);
    req->target_len = target_len;
    req->keep_alive = minor == 1 ? !close : (keep && !close);
    return HTTP_OK;
}
