/*
 * conn.h: what the event-driven servers (c-select, c-poll, c-epoll*, c-coroutine, c-uring)
 * keep per connection, besides how they wait.
 *
 * - struct conn_buf: the requests read and not yet answered, and the responses queued.
 *   conn_take_requests() answers what it holds, as serve_requests() does for a blocking
 *   server, but never waits: a request with --work-ms is handed back to the loop, which
 *   waits its own way (a timer, an io_uring timeout) and then calls conn_work_done().
 * - struct live: an intrusive list of the connections a loop owns, so that it can close
 *   every one of them when it stops.
 */
#ifndef IOM_CONN_H
#define IOM_CONN_H

#include "http.h"
#include "server.h"

#include <stddef.h>

/* A server whose wait is a database (c-db-epoll): which route a request target asks for (0: the book's response) and
 * how many rows (db_route). */
typedef int (*conn_route_fn)(const char *target, size_t len, int *rows);

struct conn_buf {
    conn_route_fn route;     /* NULL: every request gets the book's response (after its work) */
    int routed, rows;        /* the waiting request's route (0: its wait is the work) and rows */
    size_t in_len;           /* request bytes in in[] */
    size_t out_len, out_off; /* response bytes in out[], and how many of them are sent */
    int close_after;         /* close once out[] is sent */
    int keep_alive;          /* of the request whose work is pending */
    char in[HTTP_MAX_REQUEST];
    char out[SERVE_OUT_SIZE]; /* the answers to every complete request read: one write */
};

/* Answer the complete requests in b->in while b->out has room: for each, spin --spin-us,
 * queue its response, and note whether the connection closes after it; a malformed one
 * gets its error response and closes the connection. Returns 1 when it stopped at a
 * request with --work-ms to wait (the caller waits, then calls conn_work_done), 0 when it
 * needs more input, more room in b->out, or nothing more (close_after). */
int conn_take_requests(struct conn_buf *b, const struct options *opts);
/* A request b->route claims is handed back the same way (1), with b->routed and b->rows set: the loop asks the
 * database, then calls conn_answered. */

/* The waiting request's work is done: queue its response. */
void conn_work_done(struct conn_buf *b);

/* The waiting request's answer, made by the server (n bytes; room for CONN_OUT_RESERVE is kept for it): queue it,
 * and close after it when asked or when the request did not keep the connection alive. */
void conn_answered(struct conn_buf *b, const char *bytes, size_t n, int close);

/* Does b->in hold a request to answer (a complete one, or a malformed one)? */
int conn_has_request(const struct conn_buf *b);

struct live {
    struct live *prev, *next; /* a list is a struct live of its own: empty, it points at itself */
};

/* The struct that embeds live entry `n` as `member`. */
#define live_owner(n, type, member) ((type *)((char *)(n) - offsetof(type, member)))

void live_init(struct live *list);
void live_add(struct live *list, struct live *n);
/* Unlink n from its list (once unlinked, removing it again does nothing). */
void live_remove(struct live *n);
/* The first entry, or NULL when the list is empty. A loop that stops closes its connections
 * with: while ((n = live_first(&list)) != NULL) close the owner of n (which removes it). */
struct live *live_first(const struct live *list);

#endif
