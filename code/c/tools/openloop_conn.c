/*
 * openloop_conn.c: iom-openloop's connections (see openloop.c, openloop_conn.h): each place
 * of --connections opens its socket (again after a close), writes the requests the scheduler
 * gives it, all new ones in one send, and reads the answers, HTTP or frames, oldest request
 * first, telling the scheduler of each answer and each lost connection. One thread, over
 * epoll; an event of a socket closed since is told apart by its place's generation.
 */
#define _GNU_SOURCE
#include "openloop_conn.h"

#include <errno.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gen.h"

#define FRAME_MAX (1L << 20)     /* an answer frame longer than 1 MiB is garbage */
#define MAX_EVENTS 256

void conns_init(struct conns *cs, const struct config *cfg, struct sched *s)
{
    cs->cfg = cfg;
    cs->sched = s;
    cs->c = calloc((size_t)cfg->connections, sizeof *cs->c);
    cs->dirty = calloc((size_t)cfg->connections, sizeof *cs->dirty);
    if (cs->c == NULL || cs->dirty == NULL)
        die("calloc");
    for (int i = 0; i < cfg->connections; i++)
        cs->c[i] = (struct conn){.fd = -1, .index = i};
    if ((cs->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0)
        die("epoll_create1");
}

void conns_free(struct conns *cs)
{
    for (int i = 0; i < cs->cfg->connections; i++) {
        if (cs->c[i].fd >= 0 && close(cs->c[i].fd) != 0)
            die("close");
    }
    if (close(cs->epfd) != 0)
        die("close");
    free(cs->c);
    free(cs->dirty);
}

static void watch(struct conns *cs, struct conn *c, uint32_t events)
{
    watch_fd(cs->epfd, c->fd, &c->events, events, (uint64_t)c->gen << 32 | (uint32_t)c->index);
}

/* Close c's socket, if it has one; the place is down, nothing on it. */
static void conn_reset(struct conn *c)
{
    if (c->fd >= 0 && close(c->fd) != 0)
        die("close");
    c->fd = -1;
    c->state = DOWN;
    c->gen++;
    c->events = 0;
    c->nwritten = 0;
    c->unwritten = c->head_len = 0;
    c->in_body = c->close_after = 0;
    c->given = c->closing = 0;
}

void conns_close(struct conns *cs, int place)
{
    conn_reset(&cs->c[place]);
}

/* Close c's connection; every request on it ends as `o` (the scheduler frees its room). */
static void drop_conn(struct conns *cs, struct conn *c, enum outcome o, int64_t now)
{
    sched_drop(cs->sched, c->index, o, now);
    conn_reset(c);
}

static void connect_failed(struct conns *cs, struct conn *c, const char *call, int64_t now)
{
    cs->stats.connect_failures++;
    cs->stats.last_errno = errno;
    cs->stats.last_call = call;
    drop_conn(cs, c, CONNECT_ERROR, now);
}

static void conn_open(struct conns *cs, struct conn *c, int64_t now)
{
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        connect_failed(cs, c, "socket", now); /* EMFILE, say: its requests fail, the run goes on */
        return;
    }
    cs->stats.connects++;
    int one = 1;
    if (setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
        die("setsockopt TCP_NODELAY");
    if (connect(c->fd, (const struct sockaddr *)&cs->cfg->addr, sizeof cs->cfg->addr) == 0) {
        c->state = UP;
        watch(cs, c, EPOLLIN);
    } else if (errno == EINPROGRESS) {
        c->state = CONNECTING; /* EPOLLOUT says it is done, SO_ERROR how */
        watch(cs, c, EPOLLOUT);
    } else {
        connect_failed(cs, c, "connect", now);
    }
}

// BEGIN send
/* The scheduler gave the place a request (sched_assign): c is opened if it is down; the
 * request is written at the next flush. */
void conns_assign(struct conns *cs, int place, int64_t now)
{
    struct conn *c = &cs->c[place];
    c->unwritten += cs->cfg->request_len;
    if (cs->cfg->close_every > 0) /* one request at a time: this one is the connection's only unwritten one */
        c->closing = ++c->given == cs->cfg->close_every;
    if (!c->dirty) {
        c->dirty = 1;
        cs->dirty[cs->ndirty++] = c->index;
    }
    if (c->state == DOWN)
        conn_open(cs, c, now);
}

/* Requests of c not written whole yet (the last ones): a partly written one counts. */
static int unsent(const struct config *cfg, const struct conn *c)
{
    return (int)((c->unwritten + cfg->request_len - 1) / cfg->request_len);
}

/* Write what c has unwritten, all its new requests in one send when they fit. */
static void flush(struct conns *cs, struct conn *c, int64_t now)
{
    const struct config *cfg = cs->cfg;
    while (c->unwritten > 0) {
        const char *from = (c->closing ? cfg->closing : cfg->requests) + cfg->requests_len - c->unwritten;
        ssize_t w = send(c->fd, from, c->unwritten, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno == EAGAIN) {
            watch(cs, c, EPOLLIN | EPOLLOUT); /* the socket buffer is full: go on when it drains */
            return;
        }
        if (w <= 0) {
            drop_conn(cs, c, RESET, now); /* EPIPE, ECONNRESET: the server is gone */
            return;
        }
        int before = unsent(cfg, c);
        c->unwritten -= (size_t)w;
        int written = before - unsent(cfg, c);
        cs->stats.sent += written;
        c->nwritten += written;
    }
    watch(cs, c, EPOLLIN);
}

void conns_flush(struct conns *cs, int64_t now)
{
    for (int i = 0; i < cs->ndirty; i++) {
        struct conn *c = &cs->c[cs->dirty[i]];
        c->dirty = 0;
        if (c->state == UP)
            flush(cs, c, now); /* a connecting one writes once connected */
    }
    cs->ndirty = 0;
}
// END send

// BEGIN receive
/* A response is complete: it answers c's oldest request (the scheduler says how it ended).
 * Returns -1 if c was closed. */
static int answered(struct conns *cs, struct conn *c, int64_t now)
{
    if (c->nwritten == 0) { /* an answer to no request */
        cs->stats.bad_responses++;
        drop_conn(cs, c, RESET, now);
        return -1;
    }
    c->nwritten--;
    sched_answered(cs->sched, c->index, c->status, now);
    if (cs->cfg->close_mode || c->close_after || c->closing) {
        drop_conn(cs, c, RESET, now); /* nothing more comes on it: what is still on it is lost */
        return -1;
    }
    return 0;
}

/* The heads of answers: c->head holds `have` bytes of one (`old` of them seen before). Each
 * returns the head's length once it is whole, with c->status and c->body_left set; 0 while
 * it is not; -1 if it is garbage. */

/* HTTP: the head ends in an empty line. Bodies need a Content-Length (none: empty);
 * chunked bodies are not read. */
static long http_head(struct conn *c, size_t old, size_t have)
{
    size_t from = old > 3 ? old - 3 : 0;
    char *blank = memmem(c->head + from, have - from, "\r\n\r\n", 4);
    if (blank == NULL)
        return 0;
    size_t len = (size_t)(blank + 4 - c->head);
    c->head[len] = '\0';
    if (len < 12 || memcmp(c->head, "HTTP/1.", 7) != 0 || c->head[8] != ' ')
        return -1;
    char *end;
    c->status = (int)strtol(c->head + 9, &end, 10);
    if (end != c->head + 12 || c->status < 100 || c->status > 999)
        return -1;
    c->body_left = 0;
    c->close_after = 0;
    for (char *p = strchr(c->head, '\n'); p != NULL && p[1] != '\r'; p = strchr(p + 1, '\n')) {
        if (strncasecmp(p + 1, "content-length:", 15) == 0) {
            c->body_left = strtol(p + 16, &end, 10);
            if (c->body_left < 0 || end == p + 16)
                return -1;
        } else if (strncasecmp(p + 1, "transfer-encoding:", 18) == 0) {
            return -1;
        } else if (strncasecmp(p + 1, "connection:", 11) == 0) {
            char *eol = strchr(p + 1, '\r');
            c->close_after = eol != NULL && memmem(p + 12, (size_t)(eol - p - 12), "close", 5) != NULL;
        }
    }
    return (long)len;
}

/* --frame: the head is the body's length, 4 bytes big-endian; any whole frame is ok. */
static long frame_head(struct conn *c, size_t have)
{
    if (have < FRAME_HEAD)
        return 0;
    const unsigned char *h = (const unsigned char *)c->head;
    uint32_t len = (uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 | (uint32_t)h[2] << 8 | h[3];
    if (len > FRAME_MAX)
        return -1;
    c->body_left = (long)len;
    c->status = 200;
    c->close_after = 0;
    return FRAME_HEAD;
}

/* n bytes of responses arrived on c. Returns -1 if c was closed on the way. */
static int consume(struct conns *cs, struct conn *c, const char *p, size_t n, int64_t now)
{
    size_t head_max = cs->cfg->head_max;
    while (n > 0) {
        if (c->in_body) {
            size_t take = n < (size_t)c->body_left ? n : (size_t)c->body_left;
            c->body_left -= (long)take;
            p += take, n -= take;
            if (c->body_left == 0) {
                c->in_body = 0;
                if (answered(cs, c, now) < 0)
                    return -1;
            }
            continue;
        }
        size_t have = c->head_len + (head_max - c->head_len < n ? head_max - c->head_len : n);
        memcpy(c->head + c->head_len, p, have - c->head_len);
        long len = cs->cfg->frame ? frame_head(c, have) : http_head(c, c->head_len, have);
        if (len == 0 && have < head_max) { /* all of p is in the head: the rest is to come */
            c->head_len = have;
            return 0;
        }
        if (len <= 0) { /* garbage, or no end of the head in HEAD_MAX bytes */
            cs->stats.bad_responses++;
            drop_conn(cs, c, RESET, now);
            return -1;
        }
        p += (size_t)len - c->head_len, n -= (size_t)len - c->head_len;
        c->head_len = 0;
        if (c->status < 200)
            continue; /* 1xx: an interim response, the real one follows */
        if (c->body_left > 0)
            c->in_body = 1;
        else if (answered(cs, c, now) < 0)
            return -1;
    }
    return 0;
}

static void on_readable(struct conns *cs, struct conn *c, int64_t now)
{
    for (;;) {
        ssize_t r = recv(c->fd, cs->buf, sizeof cs->buf, 0);
        if (r > 0) {
            if (consume(cs, c, cs->buf, (size_t)r, now) < 0 || (size_t)r < sizeof cs->buf)
                return;
        } else if (r < 0 && errno == EINTR) {
            continue;
        } else if (r < 0 && errno == EAGAIN) {
            return;
        } else {
            drop_conn(cs, c, RESET, now); /* closed or reset: what is still on it is lost */
            return;
        }
    }
}
// END receive

static void on_event(struct conns *cs, struct conn *c, uint32_t events, int64_t now)
{
    if (c->state == CONNECTING) {
        int err = connect_result(c->fd);
        if (err != 0) {
            errno = err;
            connect_failed(cs, c, "connect", now);
            return;
        }
        c->state = UP;
        flush(cs, c, now);
        return;
    }
    uint32_t gen = c->gen;
    if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
        on_readable(cs, c, now);
    if (gen == c->gen && c->state == UP && (events & EPOLLOUT))
        flush(cs, c, now);
}

/* Sleep until an event or `until` (with nanosecond resolution where the kernel has it), and
 * handle what came. */
void conns_wait(struct conns *cs, int64_t until)
{
    struct epoll_event events[MAX_EVENTS];
    int n = wait_until(cs->epfd, events, MAX_EVENTS, until, NULL);
    int64_t now = now_ns();
    for (int e = 0; e < n; e++) {
        struct conn *c = &cs->c[(uint32_t)events[e].data.u64];
        if (c->state != DOWN && c->gen == (uint32_t)(events[e].data.u64 >> 32))
            on_event(cs, c, events[e].events, now);
    }
}

/* Keep-alive: every connection is opened (or has failed) before the first request is due. */
void conns_preconnect(struct conns *cs)
{
    int64_t now = now_ns(), until = now + cs->cfg->timeout_ns;
    for (int i = 0; i < cs->cfg->connections; i++)
        conn_open(cs, &cs->c[i], now);
    for (;;) {
        int connecting = 0;
        for (int i = 0; i < cs->cfg->connections; i++)
            connecting += cs->c[i].state == CONNECTING;
        if (connecting == 0 || (now = now_ns()) >= until)
            return;
        conns_wait(cs, until);
    }
}
