/*
 * http.h: the one HTTP/1.x request parser and the response bytes every C server shares.
 *
 * The parser is a pure function over a byte buffer: it finds one complete request
 * (request line and headers, ending in an empty line), checks it, and says how many
 * bytes it used and whether the connection stays open. Servers call it in a loop to
 * serve pipelined requests. Request bodies are not supported: a request that
 * announces one is rejected, so no byte of a body is ever mistaken for a request.
 *
 * The response bytes are the book's: iobench.http.RESPONSE_KEEP_ALIVE / _CLOSE.
 */
#ifndef IOM_HTTP_H
#define IOM_HTTP_H

#include <stddef.h>

#define HTTP_MAX_REQUEST 8192 /* request line + headers; larger requests get a 431 */

enum http_status {
    HTTP_INCOMPLETE = 0, /* need more bytes */
    HTTP_OK = 1,         /* one request parsed */
    HTTP_BAD = -1,       /* malformed: answer 400 and close */
    HTTP_TOO_LARGE = -2, /* headers over HTTP_MAX_REQUEST: answer 431 and close */
};

struct http_request {
    size_t length;     /* bytes of the buffer this request used */
    int keep_alive;    /* 1 if the connection stays open after the response */
    size_t target;     /* where the request target (the path and its query) starts in the buffer */
    size_t target_len; /* and its length (at least 1) */
};

enum http_status http_parse(const char *buf, size_t len, struct http_request *req);

/* The response to a parsed request, by its keep_alive flag. */
const char *http_response(int keep_alive, size_t *len);
/* The response for an error status (HTTP_BAD or HTTP_TOO_LARGE); the connection then closes. */
const char *http_error_response(enum http_status status, size_t *len);

#endif
