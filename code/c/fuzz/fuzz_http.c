/*
 * fuzz_http: libFuzzer target for the shared request parser (common/http.c).
 *
 * Feeds arbitrary bytes to http_parse() the way a server does (request after request,
 * as in a pipelined stream) and checks its promises: a parsed request lies inside the
 * buffer and is not empty, its target lies inside the request, and the parser never reads past the bytes it was given
 * (AddressSanitizer checks that; the input is copied into an exact-size allocation).
 *
 * Build: make -C code/c build/fuzz_http     Run: code/c/build/fuzz_http -max_total_time=20
 */
#include "../common/http.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size ? size : 1);
    if (buf == NULL)
        return 0;
    memcpy(buf, data, size);
    size_t off = 0;
    for (;;) {
        struct http_request req;
        enum http_status st = http_parse(buf + off, size - off, &req);
        if (st != HTTP_OK)
            break;
        if (req.length == 0 || req.length > size - off || req.length > HTTP_MAX_REQUEST)
            abort();
        if (req.keep_alive != 0 && req.keep_alive != 1)
            abort();
        if (req.target_len == 0 || req.target + req.target_len > req.length)
            abort();
        off += req.length;
    }
    free(buf);
    return 0;
}
