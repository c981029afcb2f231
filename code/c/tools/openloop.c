/*
 * iom-openloop: an HTTP/1.1 load generator that decides in advance when requests arrive
 * (an open loop), or keeps a fixed number of them outstanding (a closed loop, as wrk and
 * ab do); one thread over epoll.
 *
 * What it sends: GET PATH; with --body-file FILE, POST PATH with the file's bytes as the
 * body (Content-Type: application/json, or --content-type TYPE); with --frame FILE, no HTTP:
 * each request is a 4-byte big-endian length and the file's bytes, and each answer a 4-byte
 * big-endian length and that many bytes (the URL gives only the address and port). Either
 * file is read once, 1 byte to 64 KiB; every request is the same bytes.
 *
 * In a closed loop a connection sends its next request only when the last answer came
 * back, so a server that stalls also stalls its load, and the requests that would have
 * arrived meanwhile are never measured (coordinated omission, wrk2's README). Here the
 * schedule comes first: request i has an intended start fixed before the run, i / R for
 * --rate R, or after exponential gaps of mean 1 / R for --poisson (a Poisson process,
 * --seed N). Its latency counts from that intended start, whatever delayed it.
 *
 * In flight: a request is in flight from its intended start until its answer, waiting
 * here for a connection included. A connection carries at most --pipeline D requests
 * sent and unanswered (D > 1: written back to back, HTTP/1.1 pipelining); a request that
 * finds no connection with room waits here, first in first out, and goes out as soon as
 * one has room. At most --max-in-flight N are in flight in all (default connections x D
 * x 100): a request whose intended start finds N in flight is dropped, counted and never
 * sent; the schedule is never silently slowed down.
 * Timeout: a request without an answer --timeout after its intended start is a timeout.
 * When a sent one times out, its connection is closed (HTTP/1.1 answers come in order:
 * nothing behind it can come back), every request on it counts as a timeout, and the
 * next request given to that connection's place opens a new one.
 * Every request ends one way: ok (2xx; a frame has no status: any whole answer frame),
 * non2xx, timeout, connect_error (its connection could not be opened), reset (its
 * connection was reset, closed or answered garbage before its answer: a head that does not
 * parse, or a frame longer than 1 MiB) or dropped; the six add up to the offered requests.
 *
 * --closed: each of the --connections keeps D requests outstanding and sends the next on
 * each answer; latency counts from the send. Nothing waits or is dropped: offered == sent,
 * but for requests whose connection failed before they were written.
 * Latencies (of ok requests) go into a histogram of < 0.1% bucket width (tools/hist.c).
 *
 * --close: every request says Connection: close and goes on a new connection. --close-every N:
 * a connection's Nth request says Connection: close (the others Connection: keep-alive, so
 * both are the same size), and the connection is closed after its answer, as a server that
 * closes every N requests (Tomcat's maxKeepAliveRequests) would do it; the next request
 * opens a new one. Both send one request at a time on a connection (no --pipeline).
 *
 * Usage: iom-openloop (--rate R [--poisson [--seed N]] [--max-in-flight N] | --closed)
 *        [--connections 10] [--pipeline 1] [--duration 10] [--timeout 5] [--close | --close-every N]
 *        [--body-file FILE [--content-type TYPE] | --frame FILE] [--hist FILE]
 *        http://IPv4:PORT/PATH           (--frame: no --close; the PATH is not used)
 * Prints one line: OPENLOOP {"mode": "open", "offered": ..., "ok": ..., "p99_ms": ..., ...}
 * with protocol ("http" or "frame") and request_bytes (the size of one request, all of it).
 * --hist FILE also writes the latency histogram as CSV: upper_us,count (non-empty buckets).
 * Beyond the outcomes and percentiles: sent (requests written whole); send_lag_p99/max_ms
 * (how late this loop took requests up after their intended start: the generator's own
 * lag, not the server's); in_flight_max, queue_max (of those, waiting here for room);
 * conns_served and conn_min/median/max_requests (answers per connection place); timeline
 * (answers per timeline_ms), timeline_busy (requests in flight in that bucket), stall_s
 * (the longest run of busy buckets without an answer) and gap_max_ms (the same to the
 * nanosecond: a 200 ms pause can fill only one whole 100 ms bucket).
 * Build: make -C code/c build/iom-openloop         Driver: code/iobench/drivers.py ("openloop")
 * Try:   code/c/build/c-epoll --port 8080 &
 *        code/c/build/iom-openloop --rate 5000 --duration 5 http://127.0.0.1:8080/
 * Chapter: book/method/measuring.md           Tests: code/tests/test_openloop.py
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gen.h"
#include "hist.h"

#define SUB_BITS 10              /* 1024 buckets per power of two: < 0.1% wide (HdrHistogram's 3 digits) */
#define BUCKET_NS 100000000LL    /* the timeline's resolution: 100 ms */
#define RETRY_NS 100000000LL     /* closed loop: a place whose connect failed tries again 100 ms later */
#define HEAD_MAX 2048            /* a response's status line and headers */
#define FRAME_HEAD 4             /* --frame: a frame's head is its length, 4 bytes big-endian */
#define FRAME_MAX (1L << 20)     /* an answer frame longer than 1 MiB is garbage */
#define PAYLOAD_MAX 65536        /* --body-file, --frame: the most bytes a request carries */
#define MAX_EVENTS 256
#define FDS_SPARE 16             /* descriptors beyond the connections: stdio, epoll, --hist */
#define NEVER INT64_MAX

enum state { DOWN, CONNECTING, UP };
enum outcome { OK, NON2XX, TIMEOUT, CONNECT_ERROR, RESET, DROPPED, OUTCOMES };

/* One place of --connections: a connection, reopened as often as needed. */
struct conn {
    int fd, index;
    enum state state;
    uint32_t gen, events;   /* gen: events of a socket closed since are ignored */
    int first, nout;        /* its requests, oldest first: intended[first], ... (a ring of D) */
    int nwritten;           /* how many of them (from the oldest) are written completely */
    int64_t *intended;
    size_t unwritten;       /* bytes of its requests not written yet (the last ones) */
    int dirty;              /* requests given to it since the last flush */
    int in_body, status, close_after;
    int given, closing;     /* --close-every: requests given to this connection; the last one says close */
    long body_left;
    size_t head_len;
    long answers;           /* responses, over all of this place's connections */
    int deferred;           /* closed loop: room given back at retry_ns, after a failed connect */
    int64_t retry_ns;
    char head[HEAD_MAX + 1];
};

static struct {
    int open, poisson, connections, pipeline, close_mode, close_every, frame;
    double rate, duration, timeout;
    long max_in_flight;
    uint64_t seed;
    int64_t duration_ns, timeout_ns;
    struct sockaddr_in addr;
    const char *content_type;
    char *payload;          /* --body-file's body or --frame's payload; NULL: a GET */
    size_t payload_len;
    size_t head_max;        /* an answer's head: HEAD_MAX for HTTP, FRAME_HEAD for frames */
    char *requests;         /* D copies of the request, back to back */
    size_t request_len, requests_len;
    char *closing;          /* --close-every: the request that says Connection: close (request_len bytes) */
} cfg = {.open = 1, .connections = 10, .pipeline = 1, .duration = 10, .timeout = 5, .seed = 1,
         .content_type = "application/json", .head_max = HEAD_MAX};

static struct {
    long outcome[OUTCOMES], offered, sent, in_flight, in_flight_max, queue_max;
    long connects, connect_failures, bad_responses;
    int last_errno;
    const char *last_call;
    struct hist latency, lag;  /* ns: intended start -> answer (ok only); intended start -> taken up */
    long *done;                /* the timeline: answers per bucket */
    unsigned char *busy;       /* requests in flight at some time in the bucket */
    int buckets;
    int64_t gap_from, gap_max; /* the longest time without an answer while requests were in flight */
} st;

static struct conn *conns;
static int epfd;
static int64_t start_ns, next_check = NEVER;
static int64_t *queue;         /* open loop: intended starts waiting for room, a ring of N */
static long q_first, q_len;
static int *room;              /* a place's index once per free request slot, a ring of C x D */
static long r_first, r_len;
static int *dirty, ndirty;

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

// BEGIN schedule
/* Offset (ns after the start) of the next request's intended start. */
static int64_t next_arrival(void)
{
    static long i;
    static double t;          /* seconds */
    static uint64_t x;        /* splitmix64: the same --seed, the same gaps */
    if (!cfg.poisson)
        return (int64_t)((double)i++ * 1e9 / cfg.rate);
    if (x == 0)
        x = cfg.seed;
    uint64_t z = (x += 0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
    z = (z ^ (z >> 27)) * 0x94d049bb133111eb;
    z ^= z >> 31;
    double u = (double)((z >> 11) + 1) / 9007199254740992.0; /* in (0, 1] */
    t += -log(u) / cfg.rate;                                  /* an exponential gap */
    return (int64_t)(t * 1e9);
}
// END schedule

/* ---- the bookkeeping: every request in flight ends exactly once ---- */

static int bucket_of(int64_t t)
{
    int64_t b = (t - start_ns) / BUCKET_NS;
    return b < 0 ? 0 : b >= st.buckets ? st.buckets - 1 : (int)b;
}

static void mark_busy(int64_t from, int64_t to)
{
    for (int b = bucket_of(from); b <= bucket_of(to); b++)
        st.busy[b] = 1;
}

static void enter(int64_t now)
{
    if (st.in_flight++ == 0)
        st.gap_from = now;
    st.in_flight_max = st.in_flight > st.in_flight_max ? st.in_flight : st.in_flight_max;
}

static void end_gap(int64_t now)
{
    st.gap_max = now - st.gap_from > st.gap_max ? now - st.gap_from : st.gap_max;
    st.gap_from = now;
}

static void finish(enum outcome o, int64_t intended, int64_t now)
{
    st.outcome[o]++;
    if (o == DROPPED)
        return;
    if (o == OK)
        hist_record(&st.latency, now - intended);
    if (--st.in_flight == 0)
        end_gap(now);
}

static void give_room(struct conn *c, int k)
{
    long size = (long)cfg.connections * cfg.pipeline;
    for (int j = 0; j < k; j++)
        room[(r_first + r_len++) % size] = c->index;
}

static struct conn *take_room(void)
{
    struct conn *c = &conns[room[r_first]];
    r_first = (r_first + 1) % ((long)cfg.connections * cfg.pipeline);
    r_len--;
    return c;
}

/* ---- connections ---- */

static void watch(struct conn *c, uint32_t events)
{
    if (events == c->events)
        return;
    struct epoll_event ev = {.events = events, .data.u64 = (uint64_t)c->gen << 32 | (uint32_t)c->index};
    if (epoll_ctl(epfd, c->events ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, c->fd, &ev) != 0)
        die("epoll_ctl");
    c->events = events;
}

/* Close c's connection; every request on it ends as `o`, and its room is free again. */
static void drop_conn(struct conn *c, enum outcome o, int64_t now)
{
    int k = c->nout;
    for (int j = 0; j < k; j++)
        finish(o, c->intended[(c->first + j) % cfg.pipeline], now);
    if (c->fd >= 0 && close(c->fd) != 0)
        die("close");
    c->fd = -1;
    c->state = DOWN;
    c->gen++;
    c->events = 0;
    c->first = c->nout = c->nwritten = 0;
    c->unwritten = c->head_len = 0;
    c->in_body = c->close_after = 0;
    c->given = c->closing = 0;
    if (o == CONNECT_ERROR && !cfg.open) { /* closed loop: no busy loop against a refusing port */
        c->deferred += k;
        c->retry_ns = now + RETRY_NS;
        next_check = min64(next_check, c->retry_ns);
    } else {
        give_room(c, k);
    }
}

static void connect_failed(struct conn *c, const char *call, int64_t now)
{
    st.connect_failures++;
    st.last_errno = errno;
    st.last_call = call;
    drop_conn(c, CONNECT_ERROR, now);
}

static void conn_open(struct conn *c, int64_t now)
{
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        connect_failed(c, "socket", now); /* EMFILE, say: its requests fail, the run goes on */
        return;
    }
    st.connects++;
    int one = 1;
    if (setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
        die("setsockopt TCP_NODELAY");
    if (connect(c->fd, (struct sockaddr *)&cfg.addr, sizeof cfg.addr) == 0) {
        c->state = UP;
        watch(c, EPOLLIN);
    } else if (errno == EINPROGRESS) {
        c->state = CONNECTING; /* EPOLLOUT says it is done, SO_ERROR how */
        watch(c, EPOLLOUT);
    } else {
        connect_failed(c, "connect", now);
    }
}

// BEGIN send
/* Request `intended` goes to c (opened if it is down); written at the next flush. */
static void assign(struct conn *c, int64_t intended, int64_t now)
{
    c->intended[(c->first + c->nout) % cfg.pipeline] = intended;
    c->nout++;
    c->unwritten += cfg.request_len;
    if (cfg.close_every > 0) /* one request at a time: this one is the connection's only unwritten one */
        c->closing = ++c->given == cfg.close_every;
    next_check = min64(next_check, intended + cfg.timeout_ns);
    if (!c->dirty) {
        c->dirty = 1;
        dirty[ndirty++] = c->index;
    }
    if (c->state == DOWN)
        conn_open(c, now);
}

/* Write what c has unwritten, all its new requests in one send when they fit. */
static void flush(struct conn *c, int64_t now)
{
    while (c->unwritten > 0) {
        const char *from = (c->closing ? cfg.closing : cfg.requests) + cfg.requests_len - c->unwritten;
        ssize_t w = send(c->fd, from, c->unwritten, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno == EAGAIN) {
            watch(c, EPOLLIN | EPOLLOUT); /* the socket buffer is full: go on when it drains */
            return;
        }
        if (w <= 0) {
            drop_conn(c, RESET, now); /* EPIPE, ECONNRESET: the server is gone */
            return;
        }
        c->unwritten -= (size_t)w;
        int written = c->nout - (int)((c->unwritten + cfg.request_len - 1) / cfg.request_len);
        st.sent += written - c->nwritten;
        c->nwritten = written;
    }
    watch(c, EPOLLIN);
}
// END send

// BEGIN receive
/* A response is complete: it answers c's oldest request. Returns -1 if c was closed. */
static int answered(struct conn *c, int64_t now)
{
    if (c->nwritten == 0) { /* an answer to no request */
        st.bad_responses++;
        drop_conn(c, RESET, now);
        return -1;
    }
    int64_t intended = c->intended[c->first];
    c->first = (c->first + 1) % cfg.pipeline;
    c->nout--;
    c->nwritten--;
    c->answers++;
    st.done[bucket_of(now)]++;
    end_gap(now);
    enum outcome o = now - intended > cfg.timeout_ns ? TIMEOUT : c->status / 100 == 2 ? OK : NON2XX;
    finish(o, intended, now);
    give_room(c, 1);
    if (cfg.close_mode || c->close_after || c->closing) {
        drop_conn(c, RESET, now); /* nothing more comes on it: what is still on it is lost */
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
static int consume(struct conn *c, const char *p, size_t n, int64_t now)
{
    while (n > 0) {
        if (c->in_body) {
            size_t take = n < (size_t)c->body_left ? n : (size_t)c->body_left;
            c->body_left -= (long)take;
            p += take, n -= take;
            if (c->body_left == 0) {
                c->in_body = 0;
                if (answered(c, now) < 0)
                    return -1;
            }
            continue;
        }
        size_t have = c->head_len + (cfg.head_max - c->head_len < n ? cfg.head_max - c->head_len : n);
        memcpy(c->head + c->head_len, p, have - c->head_len);
        long len = cfg.frame ? frame_head(c, have) : http_head(c, c->head_len, have);
        if (len == 0 && have < cfg.head_max) { /* all of p is in the head: the rest is to come */
            c->head_len = have;
            return 0;
        }
        if (len <= 0) { /* garbage, or no end of the head in HEAD_MAX bytes */
            st.bad_responses++;
            drop_conn(c, RESET, now);
            return -1;
        }
        p += (size_t)len - c->head_len, n -= (size_t)len - c->head_len;
        c->head_len = 0;
        if (c->status < 200)
            continue; /* 1xx: an interim response, the real one follows */
        if (c->body_left > 0)
            c->in_body = 1;
        else if (answered(c, now) < 0)
            return -1;
    }
    return 0;
}

static void on_readable(struct conn *c, int64_t now)
{
    static char buf[65536];
    for (;;) {
        ssize_t r = recv(c->fd, buf, sizeof buf, 0);
        if (r > 0) {
            if (consume(c, buf, (size_t)r, now) < 0 || (size_t)r < sizeof buf)
                return;
        } else if (r < 0 && errno == EINTR) {
            continue;
        } else if (r < 0 && errno == EAGAIN) {
            return;
        } else {
            drop_conn(c, RESET, now); /* closed or reset: what is still on it is lost */
            return;
        }
    }
}
// END receive

static void on_event(struct conn *c, uint32_t events, int64_t now)
{
    if (c->state == CONNECTING) {
        int err = 0;
        socklen_t len = sizeof err;
        if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
            die("getsockopt SO_ERROR");
        if (err != 0) {
            errno = err;
            connect_failed(c, "connect", now);
            return;
        }
        c->state = UP;
        flush(c, now);
        return;
    }
    uint32_t gen = c->gen;
    if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
        on_readable(c, now);
    if (gen == c->gen && c->state == UP && (events & EPOLLOUT))
        flush(c, now);
}

/* ---- the schedule's side: arrivals, dispatch, deadlines ---- */

// BEGIN arrive
/* Request `intended` is due: in flight if there is room under --max-in-flight, else dropped. */
static void arrive(int64_t intended, int64_t now)
{
    st.offered++;
    hist_record(&st.lag, now - intended); /* how late this loop took it up */
    if (st.in_flight >= cfg.max_in_flight) {
        finish(DROPPED, intended, now);
        return;
    }
    enter(now);
    queue[(q_first + q_len++) % cfg.max_in_flight] = intended;
    st.queue_max = q_len > st.queue_max ? q_len : st.queue_max;
}

/* Waiting requests (open) or new ones (closed) go to connections with room, oldest first. */
static void dispatch(int64_t now, int64_t sched_end)
{
    while (r_len > 0) {
        int64_t intended = now;
        if (cfg.open) {
            if (q_len == 0)
                break;
            intended = queue[q_first];
            q_first = (q_first + 1) % cfg.max_in_flight;
            q_len--;
        } else {
            if (now >= sched_end)
                break;
            st.offered++;
            enter(now);
        }
        assign(take_room(), intended, now);
    }
    for (int i = 0; i < ndirty; i++) {
        struct conn *c = &conns[dirty[i]];
        c->dirty = 0;
        if (c->state == UP)
            flush(c, now); /* a connecting one writes once connected */
    }
    ndirty = 0;
}
// END arrive

/* Requests past their deadline end as timeouts; returns the next deadline. */
static int64_t expire(int64_t now)
{
    while (q_len > 0 && queue[q_first] + cfg.timeout_ns <= now) {
        finish(TIMEOUT, queue[q_first], now);
        q_first = (q_first + 1) % cfg.max_in_flight;
        q_len--;
    }
    if (now < next_check)
        return next_check;
    int64_t next = NEVER;
    for (int i = 0; i < cfg.connections; i++) {
        struct conn *c = &conns[i];
        if (c->nout > 0 && c->intended[c->first] + cfg.timeout_ns <= now)
            drop_conn(c, TIMEOUT, now); /* answers come in order: none behind it will come */
        if (c->deferred > 0 && c->retry_ns <= now) {
            give_room(c, c->deferred);
            c->deferred = 0;
        }
        if (c->nout > 0)
            next = min64(next, c->intended[c->first] + cfg.timeout_ns);
        if (c->deferred > 0)
            next = min64(next, c->retry_ns);
    }
    return next;
}

/* Sleep until an event or `until` (with nanosecond resolution where the kernel has it). */
static int wait_events(struct epoll_event *events, int64_t until)
{
    int64_t wait = until == NEVER ? 1000000000 : until - now_ns();
    wait = wait < 0 ? 0 : wait;
    struct timespec t = {.tv_sec = wait / 1000000000, .tv_nsec = wait % 1000000000};
    int n = epoll_pwait2(epfd, events, MAX_EVENTS, &t, NULL);
    if (n < 0 && errno == ENOSYS) /* before Linux 5.11: whole milliseconds, rounded up */
        n = epoll_wait(epfd, events, MAX_EVENTS, (int)((wait + 999999) / 1000000));
    if (n < 0 && errno != EINTR)
        die("epoll_pwait2");
    return n < 0 ? 0 : n;
}

static void handle_events(struct epoll_event *events, int n, int64_t now)
{
    for (int e = 0; e < n; e++) {
        struct conn *c = &conns[(uint32_t)events[e].data.u64];
        if (c->state != DOWN && c->gen == (uint32_t)(events[e].data.u64 >> 32))
            on_event(c, events[e].events, now);
    }
}

/* ---- the report ---- */

static void put_ms(const char *key, const struct hist *h, double p)
{
    if (h->total == 0)
        printf(", \"%s\": null", key);
    else if (p < 0) /* the mean */
        printf(", \"%s\": %.6f", key, (double)h->sum / (double)h->total / 1e6);
    else
        printf(", \"%s\": %.6f", key, (double)hist_value_at(h, p) / 1e6);
}

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

static void write_hist(FILE *f, const char *path)
{
    fprintf(f, "upper_us,count\n");
    for (int i = 0; i < st.latency.buckets; i++) {
        if (st.latency.counts[i])
            fprintf(f, "%.3f,%ld\n", (double)hist_bucket_high(&st.latency, i) / 1e3, st.latency.counts[i]);
    }
    int failed = ferror(f);
    if (fclose(f) != 0 || failed) {
        fprintf(stderr, "iom-openloop: write %s: %s\n", path, strerror(errno));
        exit(1);
    }
}

static void report(int64_t end)
{
    long sum = 0, *o = st.outcome;
    for (int i = 0; i < OUTCOMES; i++)
        sum += o[i];
    if (sum != st.offered || st.in_flight != 0 || q_len != 0) {
        fprintf(stderr, "iom-openloop: bug: outcomes add up to %ld of %ld offered, %ld in flight\n", sum,
                st.offered, st.in_flight);
        abort();
    }
    int n = cfg.connections, last = bucket_of(end), run = 0, stall = 0;
    long *answers = malloc((size_t)n * sizeof *answers), served = 0;
    if (answers == NULL)
        die("malloc");
    for (int i = 0; i < n; i++) {
        answers[i] = conns[i].answers;
        served += answers[i] > 0;
    }
    qsort(answers, (size_t)n, sizeof *answers, cmp_long);
    for (int b = 0; b <= last; b++) {
        run = st.busy[b] && st.done[b] == 0 ? run + 1 : 0;
        stall = run > stall ? run : stall;
    }
    printf("OPENLOOP {\"mode\": \"%s\", \"rate\": %.10g, \"poisson\": %s, \"seed\": %llu, \"connections\": %d, "
           "\"pipeline\": %d, \"max_in_flight\": %ld, \"close\": %s, \"close_every\": %d, \"protocol\": \"%s\", "
           "\"request_bytes\": %zu, "
           "\"duration_s\": %.10g, \"timeout_s\": %.10g, "
           "\"elapsed_s\": %.6f, \"offered\": %ld, \"sent\": %ld, \"ok\": %ld, \"non2xx\": %ld, \"timeouts\": %ld, "
           "\"errors_connect\": %ld, \"resets\": %ld, \"dropped\": %ld, \"achieved_rps\": %.3f",
           cfg.open ? "open" : "closed", cfg.open ? cfg.rate : 0, cfg.poisson ? "true" : "false",
           (unsigned long long)cfg.seed, n, cfg.pipeline, cfg.max_in_flight, cfg.close_mode ? "true" : "false",
           cfg.close_every, cfg.frame ? "frame" : "http", cfg.request_len, cfg.duration, cfg.timeout, (double)(end - start_ns) / 1e9,
           st.offered, st.sent, o[OK], o[NON2XX], o[TIMEOUT], o[CONNECT_ERROR], o[RESET], o[DROPPED],
           /* answers over the whole run, drain included: over the schedule's duration alone, a server
              that answered late would be credited with a rate it never kept */
           end > start_ns ? (double)o[OK] / ((double)(end - start_ns) / 1e9) : 0.0);
    put_ms("p50_ms", &st.latency, 50);
    put_ms("p90_ms", &st.latency, 90);
    put_ms("p99_ms", &st.latency, 99);
    put_ms("p99_9_ms", &st.latency, 99.9);
    put_ms("p99_99_ms", &st.latency, 99.99);
    put_ms("max_ms", &st.latency, 100);
    put_ms("mean_ms", &st.latency, -1);
    put_ms("send_lag_p99_ms", &st.lag, 99);
    put_ms("send_lag_max_ms", &st.lag, 100);
    printf(", \"in_flight_max\": %ld, \"queue_max\": %ld, \"conns_served\": %ld, \"conn_min_requests\": %ld, "
           "\"conn_median_requests\": %.1f, \"conn_max_requests\": %ld, \"connects\": %ld, \"connect_failures\": %ld, "
           "\"bad_responses\": %ld, \"stall_s\": %.1f, \"gap_max_ms\": %.3f, \"timeline_ms\": %lld, \"timeline\": [",
           st.in_flight_max, st.queue_max, served, answers[0],
           n % 2 ? (double)answers[n / 2] : (double)(answers[n / 2 - 1] + answers[n / 2]) / 2.0, answers[n - 1],
           st.connects, st.connect_failures, st.bad_responses, (double)stall * BUCKET_NS / 1e9,
           (double)st.gap_max / 1e6, BUCKET_NS / 1000000);
    for (int b = 0; b <= last; b++)
        printf("%s%ld", b ? ", " : "", st.done[b]);
    printf("], \"timeline_busy\": [");
    for (int b = 0; b <= last; b++)
        printf("%s%d", b ? ", " : "", st.busy[b]);
    printf("]}\n");
    if (fflush(stdout) != 0)
        die("write stdout");
    fprintf(stderr, "iom-openloop: %s, %.2f s: %ld offered, %ld ok, %ld non2xx, %ld timeouts, %ld connect errors, "
                    "%ld resets, %ld dropped; p50 %.3f p99 %.3f max %.3f ms\n",
            cfg.open ? "open" : "closed", (double)(end - start_ns) / 1e9, st.offered, o[OK], o[NON2XX], o[TIMEOUT],
            o[CONNECT_ERROR], o[RESET], o[DROPPED], (double)hist_value_at(&st.latency, 50) / 1e6,
            (double)hist_value_at(&st.latency, 99) / 1e6, (double)st.latency.max / 1e6);
    if (st.connect_failures)
        fprintf(stderr, "iom-openloop: %ld connects failed, the last in %s: %s\n", st.connect_failures, st.last_call,
                strerror(st.last_errno));
    if (cfg.open && st.lag.max > 1000000)
        fprintf(stderr, "iom-openloop: the generator itself took requests up to %.3f ms late (p99 %.3f ms)\n",
                (double)st.lag.max / 1e6, (double)hist_value_at(&st.lag, 99) / 1e6);
    free(answers);
}

/* ---- setup ---- */

/* --body-file or --frame: FILE's bytes -> cfg.payload. NULL, or why not (naming FILE). */
static const char *read_payload(const char *path)
{
    static char why[1200];
    const char *err = NULL;
    struct stat sb;
    FILE *f = fopen(path, "rb");
    if (f == NULL || fstat(fileno(f), &sb) != 0)
        err = strerror(errno);
    else if (!S_ISREG(sb.st_mode))
        err = "not a regular file";
    else if (sb.st_size == 0)
        err = "empty";
    else if (sb.st_size > PAYLOAD_MAX)
        err = "longer than 64 KiB (65536 bytes)";
    else if ((cfg.payload = malloc((size_t)sb.st_size)) == NULL)
        die("malloc");
    else if (fread(cfg.payload, 1, (size_t)sb.st_size, f) != (size_t)sb.st_size)
        err = ferror(f) ? strerror(errno) : "shorter than when it was opened";
    else
        cfg.payload_len = (size_t)sb.st_size;
    if (f != NULL && fclose(f) != 0)
        die("fclose");
    if (err == NULL)
        return NULL;
    snprintf(why, sizeof why, "--%s %.1024s: %s", cfg.frame ? "frame" : "body-file", path, err);
    return why;
}

/* http://IPv4:PORT/PATH -> cfg.addr and the request; 0 if it is not one. */
static int parse_url(const char *url)
{
    char host[64], port[8];
    int n = 0;
    if (sscanf(url, "http://%63[0-9.]:%7[0-9]%n", host, port, &n) != 2 || n == 0)
        return 0;
    const char *path = url[n] ? url + n : "/";
    long p = strtol(port, NULL, 10);
    if (p < 1 || p > 65535 || path[0] != '/' || strlen(path) > 1024 || strpbrk(path, " \r\n") != NULL)
        return 0;
    cfg.addr = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons((uint16_t)p)};
    if (inet_pton(AF_INET, host, &cfg.addr.sin_addr) != 1)
        return 0;
    char head[HEAD_MAX];    /* the request's head: the path is at most 1024 bytes, the type 256 */
    size_t head_len = FRAME_HEAD;
    if (cfg.frame) {
        uint32_t be = htonl((uint32_t)cfg.payload_len);
        memcpy(head, &be, FRAME_HEAD);
    } else {
        int len = snprintf(head, sizeof head, "%s %s HTTP/1.1\r\nHost: %s:%ld\r\n", cfg.payload ? "POST" : "GET",
                           path, host, p);
        if (cfg.payload)
            len += snprintf(head + len, sizeof head - (size_t)len, "Content-Type: %s\r\nContent-Length: %zu\r\n",
                            cfg.content_type, cfg.payload_len);
        /* --close-every: "close" padded to the size of "keep-alive" (spaces after a value are allowed) */
        len += snprintf(head + len, sizeof head - (size_t)len, "%s\r\n",
                        cfg.close_mode ? "Connection: close\r\n" : cfg.close_every ? "Connection: keep-alive\r\n" : "");
        head_len = (size_t)len;
    }
    cfg.request_len = head_len + cfg.payload_len;
    cfg.requests_len = cfg.request_len * (size_t)cfg.pipeline;
    if ((cfg.requests = malloc(cfg.requests_len)) == NULL)
        die("malloc");
    for (int i = 0; i < cfg.pipeline; i++) {
        char *r = cfg.requests + (size_t)i * cfg.request_len;
        memcpy(r, head, head_len);
        if (cfg.payload_len)
            memcpy(r + head_len, cfg.payload, cfg.payload_len);
    }
    if (cfg.close_every) {
        if ((cfg.closing = malloc(cfg.request_len)) == NULL)
            die("malloc");
        memcpy(cfg.closing, cfg.requests, cfg.request_len);
        char *value = memmem(cfg.closing, head_len, "Connection: keep-alive\r\n", 24);
        memcpy(value, "Connection: close     \r\n", 24);
    }
    return 1;
}

static void setup(void)
{
    struct rlimit nofile;
    if (getrlimit(RLIMIT_NOFILE, &nofile) != 0)
        die("getrlimit RLIMIT_NOFILE");
    if (nofile.rlim_cur != RLIM_INFINITY && (rlim_t)cfg.connections + FDS_SPARE > nofile.rlim_cur) {
        fprintf(stderr, "iom-openloop: getrlimit RLIMIT_NOFILE: %llu descriptors, too few for %d connections\n",
                (unsigned long long)nofile.rlim_cur, cfg.connections);
        exit(1);
    }
    if (prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0) != 0) /* wake within 1 µs of a request's time, not 50 */
        die("prctl PR_SET_TIMERSLACK");
    long places = (long)cfg.connections * cfg.pipeline;
    st.buckets = (int)((cfg.duration_ns + cfg.timeout_ns) / BUCKET_NS) + 2;
    conns = calloc((size_t)cfg.connections, sizeof *conns);
    int64_t *rings = calloc((size_t)places, sizeof *rings);
    room = calloc((size_t)places, sizeof *room);
    dirty = calloc((size_t)cfg.connections, sizeof *dirty);
    queue = cfg.open ? calloc((size_t)cfg.max_in_flight, sizeof *queue) : NULL;
    st.done = calloc((size_t)st.buckets, sizeof *st.done);
    st.busy = calloc((size_t)st.buckets, 1);
    if (conns == NULL || rings == NULL || room == NULL || dirty == NULL || (cfg.open && queue == NULL) ||
        st.done == NULL || st.busy == NULL || hist_init(&st.latency, SUB_BITS) != 0 ||
        hist_init(&st.lag, SUB_BITS) != 0)
        die("calloc");
    for (int i = 0; i < cfg.connections; i++) {
        conns[i] = (struct conn){.fd = -1, .index = i, .intended = rings + (long)i * cfg.pipeline};
    }
    for (int d = 0; d < cfg.pipeline; d++) { /* spread over the connections before pipelining */
        for (int i = 0; i < cfg.connections; i++)
            give_room(&conns[i], 1);
    }
    if ((epfd = epoll_create1(EPOLL_CLOEXEC)) < 0)
        die("epoll_create1");
}

/* Keep-alive: every connection is opened (or has failed) before the first request is due. */
static void preconnect(void)
{
    struct epoll_event events[MAX_EVENTS];
    int64_t now = now_ns(), until = now + cfg.timeout_ns;
    for (int i = 0; i < cfg.connections; i++)
        conn_open(&conns[i], now);
    for (;;) {
        int connecting = 0;
        for (int i = 0; i < cfg.connections; i++)
            connecting += conns[i].state == CONNECTING;
        if (connecting == 0 || (now = now_ns()) >= until)
            return;
        handle_events(events, wait_events(events, until), now_ns());
    }
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"rate", required_argument, NULL, 'r'},        {"poisson", no_argument, NULL, 'P'},
        {"seed", required_argument, NULL, 's'},        {"closed", no_argument, NULL, 'C'},
        {"connections", required_argument, NULL, 'c'}, {"pipeline", required_argument, NULL, 'p'},
        {"max-in-flight", required_argument, NULL, 'm'}, {"duration", required_argument, NULL, 'd'},
        {"timeout", required_argument, NULL, 't'},     {"close", no_argument, NULL, 'x'},
        {"hist", required_argument, NULL, 'H'},        {"body-file", required_argument, NULL, 'b'},
        {"content-type", required_argument, NULL, 'T'}, {"frame", required_argument, NULL, 'F'},
        {"close-every", required_argument, NULL, 'e'}, {NULL, 0, NULL, 0}};
    double connections = cfg.connections, pipeline = cfg.pipeline, max_in_flight = 0, seed = -1, close_every = 0;
    const char *hist_path = NULL, *body_path = NULL, *frame_path = NULL, *content_type = NULL, *file_error;
    int o, opt_index = 0, ok = 1;
    while ((o = getopt_long(argc, argv, "", opts, &opt_index)) != -1) {
        switch (o) {
        case 'r': ok = parse_number(optarg, 1e-3, 1e8, 0, &cfg.rate); break;
        case 'P': cfg.poisson = 1; break;
        case 's': ok = parse_number(optarg, 0, 9007199254740992.0, 1, &seed); break;
        case 'C': cfg.open = 0; break;
        case 'c': ok = parse_number(optarg, 1, 1000000, 1, &connections); break;
        case 'p': ok = parse_number(optarg, 1, 1024, 1, &pipeline); break;
        case 'm': ok = parse_number(optarg, 1, 1e8, 1, &max_in_flight); break;
        case 'd': ok = parse_number(optarg, 0.001, 86400, 0, &cfg.duration); break;
        case 't': ok = parse_number(optarg, 0.001, 3600, 0, &cfg.timeout); break;
        case 'x': cfg.close_mode = 1; break;
        case 'e': ok = parse_number(optarg, 2, 1e9, 1, &close_every); break;
        case 'H': hist_path = optarg; break;
        case 'b': body_path = optarg; break;
        case 'T': content_type = optarg; break;
        case 'F': frame_path = optarg; break;
        default: goto usage; /* getopt_long has named the flag */
        }
        if (!ok) {
            fprintf(stderr, "iom-openloop: --%s: bad value '%s'\n", opts[opt_index].name, optarg);
            goto usage;
        }
    }
    cfg.connections = (int)connections;
    cfg.pipeline = (int)pipeline;
    cfg.close_every = (int)close_every;
    cfg.seed = seed < 0 ? 1 : (uint64_t)seed;
    cfg.frame = frame_path != NULL;
    const char *payload_path = cfg.frame ? frame_path : body_path;
    cfg.head_max = cfg.frame ? FRAME_HEAD : HEAD_MAX;
    cfg.content_type = content_type ? content_type : cfg.content_type;
    long def_max = (long)cfg.connections * cfg.pipeline * 100;
    cfg.max_in_flight = max_in_flight > 0 ? (long)max_in_flight : def_max < 100000000 ? def_max : 100000000;
    const char *why = optind != argc - 1                             ? "one URL, after the flags"
                      : cfg.open && cfg.rate == 0                     ? "--rate R (or --closed) is required"
                      : !cfg.open && (cfg.rate > 0 || cfg.poisson)    ? "--closed takes no --rate or --poisson"
                      : !cfg.open && max_in_flight > 0                ? "--closed takes no --max-in-flight"
                      : seed >= 0 && !cfg.poisson                     ? "--seed needs --poisson"
                      : cfg.close_mode && cfg.pipeline > 1            ? "--close sends one request per connection: no --pipeline"
                      : cfg.close_mode && cfg.close_every             ? "--close and --close-every exclude each other"
                      : cfg.close_every && cfg.pipeline > 1           ? "--close-every sends one request at a time: no --pipeline"
                      : frame_path && cfg.close_every                 ? "--frame has no Connection: close: no --close-every"
                      : frame_path && body_path                       ? "--frame and --body-file exclude each other"
                      : frame_path && cfg.close_mode                  ? "--frame has no Connection: close: no --close"
                      : content_type && !body_path                    ? "--content-type needs --body-file"
                      : content_type && (!*content_type || strlen(content_type) > 256 || strpbrk(content_type, "\r\n"))
                          ? "--content-type: one line of 1 to 256 bytes"
                      : payload_path && (file_error = read_payload(payload_path)) ? file_error
                      : !parse_url(argv[optind])                      ? "the URL must be http://IPv4:PORT[/PATH]"
                                                                      : NULL;
    if (why != NULL) {
        fprintf(stderr, "iom-openloop: %s\n", why);
        goto usage;
    }
    if (!cfg.open)
        cfg.max_in_flight = (long)cfg.connections * cfg.pipeline;
    cfg.duration_ns = (int64_t)(cfg.duration * 1e9);
    cfg.timeout_ns = (int64_t)(cfg.timeout * 1e9);
    FILE *hist_file = hist_path ? fopen(hist_path, "w") : NULL;
    if (hist_path && hist_file == NULL) {
        fprintf(stderr, "iom-openloop: fopen %s: %s\n", hist_path, strerror(errno));
        return 1;
    }
    setup();
    if (!cfg.close_mode)
        preconnect();

    // BEGIN loop
    struct epoll_event events[MAX_EVENTS];
    start_ns = now_ns();
    int64_t sched_end = start_ns + cfg.duration_ns, hard_end = sched_end + cfg.timeout_ns;
    int64_t next_at = cfg.open ? start_ns + next_arrival() : NEVER, now = start_ns, waited_from = start_ns;
    int was_busy = 0;
    for (;;) {
        now = now_ns();
        if (was_busy)
            mark_busy(waited_from, now); /* in flight all through the wait */
        while (next_at < sched_end && next_at <= now) {
            arrive(next_at, now);
            next_at = start_ns + next_arrival();
        }
        next_check = expire(now);
        dispatch(now, sched_end);
        int scheduling = cfg.open ? next_at < sched_end : now < sched_end;
        if (!scheduling && st.in_flight == 0)
            break;
        if (now >= hard_end) { /* every deadline has passed: nothing is left, or it is a timeout */
            next_check = now;
            cfg.timeout_ns = 0;
            expire(now);
            break;
        }
        if ((was_busy = st.in_flight > 0))
            mark_busy(now, now);
        int64_t wake = min64(next_check, hard_end);
        if (q_len > 0)
            wake = min64(wake, queue[q_first] + cfg.timeout_ns);
        wake = min64(wake, cfg.open ? next_at : scheduling ? sched_end : NEVER);
        waited_from = now;
        int n = wait_events(events, wake);
        handle_events(events, n, now_ns());
    }
    // END loop

    report(now);
    if (hist_file)
        write_hist(hist_file, hist_path);
    return 0;
usage:
    fprintf(stderr,
            "usage: %s (--rate R [--poisson [--seed N]] [--max-in-flight N] | --closed)\n"
            "       [--connections 10] [--pipeline 1] [--duration 10] [--timeout 5] [--close | --close-every N]\n"
            "       [--hist FILE] [--body-file FILE [--content-type application/json] | --frame FILE]\n"
            "       http://IPv4:PORT[/PATH]\n"
            "  open loop: R requests/s at fixed (or --poisson) times, latency from each intended start;\n"
            "  at most --pipeline unanswered per connection, at most --max-in-flight (default\n"
            "  connections x pipeline x 100) in flight, the rest dropped; --closed: each connection keeps\n"
            "  --pipeline requests outstanding. Prints OPENLOOP {json} on stdout.\n"
            "  GET PATH; --body-file: POST PATH with FILE as the body; --frame: no HTTP, each request a\n"
            "  4-byte big-endian length and FILE, each answer a length and its bytes (the URL's host and\n"
            "  port only; no --close). FILE: 1 byte to 64 KiB. --close: each request on a new connection;\n"
            "  --close-every N: each connection's Nth request says Connection: close (needs --pipeline 1).\n",
            argv[0]);
    return 2;
}
