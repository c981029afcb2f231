/*
 * conn.c: see conn.h.
 */
#include "conn.h"

#include <string.h>

#define MAX_RESPONSE 256 /* room for any response of http.c */
/* Room kept free in out[] for an answer the server makes itself (c-db-epoll: its largest JSON answer). */
#ifndef CONN_OUT_RESERVE
#define CONN_OUT_RESERVE 0
#endif

static void queue(struct conn_buf *b, const char *bytes, size_t n)
{
    memcpy(b->out + b->out_len, bytes, n);
    b->out_len += n;
}

void conn_answered(struct conn_buf *b, const char *bytes, size_t n, int close)
{
    if (b->out_len + n > sizeof b->out) { /* cannot happen with CONN_OUT_RESERVE: close rather than overflow */
        b->close_after = 1;
        return;
    }
    queue(b, bytes, n);
    b->routed = 0;
    b->close_after = close || !b->keep_alive;
}

void conn_work_done(struct conn_buf *b)
{
    size_t n;
    const char *resp = http_response(b->keep_alive, &n);
    queue(b, resp, n);
    b->close_after = !b->keep_alive;
}

int conn_take_requests(struct conn_buf *b, const struct options *opts)
{
    struct http_request req;
    enum http_status st;
    while (!b->close_after && b->out_len + MAX_RESPONSE + CONN_OUT_RESERVE <= sizeof b->out &&
           (st = http_parse(b->in, b->in_len, &req)) != HTTP_INCOMPLETE) {
        if (st != HTTP_OK) {
            size_t n;
            const char *resp = http_error_response(st, &n);
            queue(b, resp, n);
            b->close_after = 1;
            return 0;
        }
        b->routed = b->route ? b->route(b->in + req.target, req.target_len, &b->rows) : 0;
        b->in_len -= req.length;
        memmove(b->in, b->in + req.length, b->in_len);
        b->keep_alive = req.keep_alive;
        if (b->routed)
            return 1; /* the server makes the answer: the loop asks, then calls conn_answered */
        if (opts->work_ms > 0)
            return 1; /* the loop must not sleep: it waits for the work its own way */
        work_spin_us(opts->spin_us); /* CPU work runs on the loop */
        conn_work_done(b);
    }
    return 0;
}

int conn_has_request(const struct conn_buf *b)
{
    struct http_request req;
    return http_parse(b->in, b->in_len, &req) != HTTP_INCOMPLETE;
}

void live_init(struct live *list)
{
    list->prev = list->next = list;
}

void live_add(struct live *list, struct live *n)
{
    n->prev = list;
    n->next = list->next;
    list->next->prev = n;
    list->next = n;
}

void live_remove(struct live *n)
{
    n->prev->next = n->next;
    n->next->prev = n->prev;
    n->prev = n->next = n; /* removing it again does nothing */
}

struct live *live_first(const struct live *list)
{
    return list->next == list ? NULL : list->next;
}
