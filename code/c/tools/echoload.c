/*
 * iom-echoload: a closed-loop TCP echo load generator, one thread over epoll.
 *
 * The 2013 benchmark of Mina and Netty the book reproduces sent messages of 1 KiB to
 * 100 KiB to an echo server and timed each round trip. Here every connection does the
 * same, forever: write one message of --size bytes, wait until exactly that many bytes
 * have come back, compare them with what was sent, record the latency (first byte
 * written -> last byte read), and send the next one at once. The protocol has no
 * framing: the server echoes every byte it receives, so a server that loses, changes or
 * reorders a byte is caught by the comparison (each message's bytes depend on its
 * connection and its sequence number). --split-every K --split-at B --split-pause-us U
 * writes every K-th message in two parts, B bytes and then the rest U µs later, so the
 * server sees part of a message arrive; without --nodelay, Nagle stays on, as it was
 * for the benchmark's JMeter client. Latencies go into a log-linear histogram (< 1% error,
 * tools/hist.c, shared with iom-openloop).
 *
 * Usage: iom-echoload --port N [--host 127.0.0.1] [--connections 32] [--size 5120]
 *        [--duration 10] [--warmup 0] [--timeout 5] [--nodelay] [--hist]
 *        [--split-every K --split-at B [--split-pause-us U]]
 * Prints one line: ECHOLOAD {"messages": ..., "tps": ..., "p99_ms": ..., ...}
 * Build: make -C code/c build/iom-echoload      Driver: code/iobench/drivers.py ("echo")
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gen.h"
#include "hist.h"

#define SUB_BITS 7                       /* 128 linear buckets per power of two: < 0.8% error */
#define PATTERN_SPAN 65536               /* messages start at different offsets of one pattern */
#define RETRY_NS 100000000LL             /* a failed connect is retried 100 ms later */
#define STALL_NS 35000000LL              /* stalls_35ms: a delayed ACK's 40 ms shows up here */

enum state { DOWN, CONNECTING, ACTIVE };

struct conn {
    int fd, index;
    enum state state;
    uint32_t gen, events;  /* gen: stale epoll events of a closed socket are ignored */
    uint64_t seq;          /* messages started on this connection */
    const unsigned char *msg;
    size_t sent, received;
    int split_pending, counted;
    int64_t started_ns;    /* first byte written (or connect started) */
    int64_t resume_ns;     /* a split message's second part is due (0: not paused) */
    int64_t retry_ns;      /* DOWN: reconnect then */
};

static struct {
    struct sockaddr_in addr;
    int connections, nodelay, hist, split_every;
    size_t size, split_at;
    long split_pause_us;
    double duration, warmup, timeout;
    int64_t timeout_ns;
} cfg = {.connections = 32, .duration = 10, .timeout = 5};

static struct {
    long messages, errors_connect, errors_read, errors_write, errors_timeout, errors_mismatch, stalls;
    int64_t sum_ns, max_ns;
    long coarse[64]; /* coarse[k]: latencies in [2^(k-1), 2^k) µs */
} st;

static struct hist latency; /* nanoseconds, SUB_BITS (tools/hist.c) */

static struct conn *conns;
static int epfd, measuring, ever_connected, last_connect_errno;
static int64_t end_ns = INT64_MAX;
static unsigned char *pattern, scratch[65536];
static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

// BEGIN histogram
static void record(int64_t ns)
{
    st.messages++;
    st.sum_ns += ns;
    st.max_ns = ns > st.max_ns ? ns : st.max_ns;
    st.stalls += ns >= STALL_NS;
    hist_record(&latency, ns);
    uint64_t us = (uint64_t)ns / 1000;
    st.coarse[us ? 64 - __builtin_clzll(us) : 0]++;
}

static double pct_ms(double p)
{
    return (double)hist_value_at(&latency, p) / 1e6;
}
// END histogram

static void watch(struct conn *c, uint32_t events)
{
    watch_fd(epfd, c->fd, &c->events, events, (uint64_t)c->gen << 32 | (uint32_t)c->index);
}

static void start_message(struct conn *c, int64_t now);

static void connected(struct conn *c, int64_t now)
{
    c->state = ACTIVE;
    ever_connected = 1;
    start_message(c, now);
}

static void connect_failed(struct conn *c, int err, int64_t now)
{
    st.errors_connect++;
    last_connect_errno = err;
    if (close(c->fd) != 0)
        die("close");
    c->state = DOWN;
    c->retry_ns = now + RETRY_NS; /* refused, say: try again soon, not in a busy loop */
}

static void open_conn(struct conn *c, int64_t now)
{
    c->gen++;
    c->events = 0;
    c->started_ns = now;
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0)
        die("socket");
    int one = 1;
    if (cfg.nodelay && setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
        die("setsockopt TCP_NODELAY");
    if (connect(c->fd, (struct sockaddr *)&cfg.addr, sizeof cfg.addr) == 0) {
        connected(c, now);
    } else if (errno == EINPROGRESS || errno == EINTR) {
        c->state = CONNECTING; /* EPOLLOUT says it is done, SO_ERROR how */
        watch(c, EPOLLOUT);
    } else {
        connect_failed(c, errno, now);
    }
}

/* Give up on this connection (and its message): a new one takes its place. */
static void reopen(struct conn *c, int64_t now)
{
    if (close(c->fd) != 0)
        die("close");
    open_conn(c, now);
}

// BEGIN write
/* Write what may be written now: up to the split point, or the whole message. */
static void write_some(struct conn *c)
{
    size_t limit = c->split_pending ? cfg.split_at : cfg.size;
    while (c->sent < limit) {
        ssize_t w = send(c->fd, c->msg + c->sent, limit - c->sent, MSG_NOSIGNAL);
        if (w > 0) {
            c->sent += (size_t)w;
        } else if (w < 0 && errno == EAGAIN) {
            watch(c, EPOLLIN | EPOLLOUT); /* the socket buffer is full: go on when it drains */
            return;
        } else if (!(w < 0 && errno == EINTR)) {
            st.errors_write++;
            reopen(c, now_ns());
            return;
        }
    }
    if (c->split_pending) {
        c->split_pending = 0;
        c->resume_ns = now_ns() + cfg.split_pause_us * 1000; /* the loop wakes up for it */
    }
    watch(c, EPOLLIN);
}

static void start_message(struct conn *c, int64_t now)
{
    c->seq++;
    /* the bytes depend on the connection and the message: a stale or foreign echo differs */
    c->msg = pattern + ((size_t)c->index * 4099 + c->seq * 257) % PATTERN_SPAN;
    c->sent = c->received = 0;
    c->split_pending = cfg.split_every > 0 && c->seq % (uint64_t)cfg.split_every == 0;
    c->resume_ns = 0;
    c->counted = measuring;
    c->started_ns = now;
    write_some(c);
}
// END write

// BEGIN read
/* Read the echo as far as it has come, checking every chunk against what was sent. */
static void read_some(struct conn *c)
{
    for (;;) {
        size_t want = cfg.size - c->received < sizeof scratch ? cfg.size - c->received : sizeof scratch;
        ssize_t r = recv(c->fd, scratch, want, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && errno == EAGAIN)
            return;
        if (r <= 0) {
            st.errors_read++; /* closed by the server (0) or reset */
            reopen(c, now_ns());
            return;
        }
        if (c->received + (size_t)r > c->sent || memcmp(scratch, c->msg + c->received, (size_t)r) != 0) {
            st.errors_mismatch++;
            reopen(c, now_ns());
            return;
        }
        c->received += (size_t)r;
        if (c->received == cfg.size) {
            int64_t now = now_ns();
            if (c->counted && now < end_ns)
                record(now - c->started_ns);
            start_message(c, now); /* closed loop: the next one leaves at once */
            return;
        }
    }
}
// END read

/* Timeouts, the end of a split's pause, reconnects; returns when this connection next needs a look. */
static int64_t tick(struct conn *c, int64_t now)
{
    if (c->state == DOWN && now >= c->retry_ns)
        open_conn(c, now);
    if (c->state == DOWN)
        return c->retry_ns;
    if (now - c->started_ns >= cfg.timeout_ns) {
        if (c->state == CONNECTING) {
            connect_failed(c, ETIMEDOUT, now);
            return c->retry_ns;
        }
        st.errors_timeout++;
        reopen(c, now);
        return tick(c, now);
    }
    if (c->resume_ns != 0 && now >= c->resume_ns) {
        c->resume_ns = 0;
        write_some(c);
        return tick(c, now);
    }
    int64_t next = c->started_ns + cfg.timeout_ns;
    return c->resume_ns != 0 && c->resume_ns < next ? c->resume_ns : next;
}

static void handle(struct conn *c, uint32_t events)
{
    if (c->state == CONNECTING) {
        int err = connect_result(c->fd);
        if (err != 0)
            connect_failed(c, err, now_ns());
        else
            connected(c, now_ns());
        return;
    }
    uint32_t gen = c->gen;
    if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
        read_some(c);
    if (gen == c->gen && (events & EPOLLOUT) && c->resume_ns == 0 && c->sent < cfg.size)
        write_some(c);
}

/* The one line on stdout (and a summary on stderr). */
static void report(double elapsed)
{
    double tps = elapsed > 0 ? (double)st.messages / elapsed : 0;
    printf("ECHOLOAD {\"connections\": %d, \"size\": %zu, \"duration_s\": %.6f, \"messages\": %ld, "
           "\"tps\": %.3f, \"bytes_per_s\": %.1f, \"mean_ms\": %.4f, \"p50_ms\": %.4f, \"p90_ms\": %.4f, "
           "\"p99_ms\": %.4f, \"p99_9_ms\": %.4f, \"max_ms\": %.4f, \"stalls_35ms\": %ld, "
           "\"errors_connect\": %ld, \"errors_read\": %ld, \"errors_write\": %ld, \"errors_timeout\": %ld, "
           "\"errors_mismatch\": %ld, \"nodelay\": %d, \"split_every\": %d, \"split_at\": %zu, "
           "\"split_pause_us\": %ld, \"warmup_s\": %g",
           cfg.connections, cfg.size, elapsed, st.messages, tps, tps * (double)cfg.size,
           st.messages ? (double)st.sum_ns / (double)st.messages / 1e6 : 0, pct_ms(50), pct_ms(90), pct_ms(99),
           pct_ms(99.9), (double)st.max_ns / 1e6, st.stalls, st.errors_connect, st.errors_read, st.errors_write,
           st.errors_timeout, st.errors_mismatch, cfg.nodelay, cfg.split_every, cfg.split_at,
           cfg.split_pause_us, cfg.warmup);
    if (cfg.hist) { /* [upper bound in µs, count] of the non-empty powers of two */
        const char *sep = "";
        printf(", \"hist\": [");
        for (int k = 0; k < 64; k++) {
            if (st.coarse[k])
                printf("%s[%llu, %ld]", sep, 1ULL << k, st.coarse[k]), sep = ", ";
        }
        printf("]");
    }
    printf("}\n");
    if (fflush(stdout) != 0)
        die("write stdout");
    fprintf(stderr, "iom-echoload: %d x %zu B, %.2f s: %ld echoes (%.1f/s), p50 %.3f p99 %.3f max %.3f ms, "
                    "errors connect %ld read %ld write %ld timeout %ld mismatch %ld\n",
            cfg.connections, cfg.size, elapsed, st.messages, tps, pct_ms(50), pct_ms(99),
            (double)st.max_ns / 1e6, st.errors_connect, st.errors_read, st.errors_write, st.errors_timeout,
            st.errors_mismatch);
}

/* What cfg takes only once the flags are checked together: the address, sizes, the pause. */
static struct {
    const char *host;
    int port;                    /* 0: not given */
    double size, split_at, pause_us; /* pause_us -1: not given */
} arg = {.host = "127.0.0.1", .size = 5120, .pause_us = -1};

static const char USAGE[] =
    "usage: %s --port N [--host 127.0.0.1] [--connections 32] [--size 5120] [--duration 10]\n"
    "       [--warmup 0] [--timeout 5] [--nodelay] [--hist]\n"
    "       [--split-every K --split-at B [--split-pause-us U]]\n"
    "  a closed-loop TCP echo load: each connection sends SIZE bytes, waits for them to come\n"
    "  back, and sends the next; prints ECHOLOAD {json} on stdout\n";

/* getopt_long's table: a switch sets its int itself, a flag with a value is its letter's case in take_flag. */
static const struct option OPTIONS[] = {
    {"host", required_argument, NULL, 'h'},        {"port", required_argument, NULL, 'p'},
    {"connections", required_argument, NULL, 'c'}, {"size", required_argument, NULL, 's'},
    {"duration", required_argument, NULL, 'd'},    {"warmup", required_argument, NULL, 'w'},
    {"timeout", required_argument, NULL, 't'},     {"nodelay", no_argument, &cfg.nodelay, 1},
    {"split-every", required_argument, NULL, 'K'}, {"split-at", required_argument, NULL, 'B'},
    {"split-pause-us", required_argument, NULL, 'U'}, {"hist", no_argument, &cfg.hist, 1},
    {NULL, 0, NULL, 0}};

/* One flag of the command line (take_flags, gen.h): 0 if its value is bad. */
static int take_flag(int flag, const char *value)
{
    switch (flag) {
    case 'h': arg.host = value; break;
    case 'p': return parse_int(value, 1, 65535, &arg.port);
    case 'c': return parse_int(value, 1, 1000000, &cfg.connections);
    case 's': return parse_number(value, 1, 1 << 30, 1, &arg.size);
    case 'd': return parse_number(value, 0.001, 1e7, 0, &cfg.duration);
    case 'w': return parse_number(value, 0, 1e7, 0, &cfg.warmup);
    case 't': return parse_number(value, 0.001, 1e7, 0, &cfg.timeout);
    case 'K': return parse_int(value, 1, INT_MAX, &cfg.split_every);
    case 'B': return parse_number(value, 1, 1 << 30, 1, &arg.split_at);
    case 'U': return parse_number(value, 0, 6e7, 1, &arg.pause_us);
    }
    return 1;
}

int main(int argc, char **argv)
{
    if (!take_flags(argc, argv, OPTIONS, take_flag))
        bad_usage(NULL, USAGE, 2);
    cfg.size = (size_t)arg.size;
    cfg.split_at = (size_t)arg.split_at;
    cfg.split_pause_us = arg.pause_us < 0 ? 0 : (long)arg.pause_us;
    cfg.addr = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons((uint16_t)arg.port)};
    int host_ok = inet_pton(AF_INET, arg.host, &cfg.addr.sin_addr) == 1;
    const char *why = optind != argc                   ? "unexpected arguments after the flags"
                      : arg.port == 0                  ? "--port is required"
                      : !host_ok                       ? "--host: not an IPv4 address"
                      : cfg.split_every && (cfg.split_at == 0 || cfg.split_at >= cfg.size)
                          ? "--split-at: needed with --split-every, between 1 and --size - 1"
                      : !cfg.split_every && (cfg.split_at || arg.pause_us >= 0)
                          ? "--split-at and --split-pause-us need --split-every"
                          : NULL;
    if (why != NULL)
        bad_usage(why, USAGE, 2);
    cfg.timeout_ns = (int64_t)(cfg.timeout * 1e9);

    /* SIGTERM and SIGINT are blocked except inside epoll_pwait2: no stop is ever missed. */
    sigset_t block, during_wait;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    if (sigprocmask(SIG_BLOCK, &block, &during_wait) != 0)
        die("sigprocmask");
    sigdelset(&during_wait, SIGTERM);
    sigdelset(&during_wait, SIGINT);
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGTERM, &sa, NULL) != 0 || sigaction(SIGINT, &sa, NULL) != 0)
        die("sigaction");

    conns = calloc((size_t)cfg.connections, sizeof *conns);
    if (conns == NULL || (pattern = malloc(PATTERN_SPAN + cfg.size)) == NULL)
        die("malloc");
    if (hist_init(&latency, SUB_BITS) != 0)
        die("calloc");
    uint64_t x = 0x9e3779b97f4a7c15; /* xorshift64: bytes no server would produce by accident */
    for (size_t i = 0; i < PATTERN_SPAN + cfg.size; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        pattern[i] = (unsigned char)(x >> 56);
    }
    if ((epfd = epoll_create1(EPOLL_CLOEXEC)) < 0)
        die("epoll_create1");

    // BEGIN loop
    int64_t start = now_ns(), switch_ns = start + (int64_t)(cfg.warmup * 1e9), measure_start = start;
    measuring = cfg.warmup == 0;
    if (measuring)
        end_ns = start + (int64_t)(cfg.duration * 1e9);
    for (int i = 0; i < cfg.connections; i++) {
        conns[i].index = i;
        open_conn(&conns[i], start);
    }
    struct epoll_event events[256];
    int64_t now;
    while (!stop_requested) {
        now = now_ns();
        if (!measuring && now >= switch_ns) {
            memset(&st, 0, sizeof st); /* the warmup counts for nothing */
            hist_reset(&latency);
            measuring = 1;
            measure_start = now;
            end_ns = now + (int64_t)(cfg.duration * 1e9);
        }
        if (now >= end_ns)
            break;
        int64_t next = measuring ? end_ns : switch_ns;
        for (int i = 0; i < cfg.connections; i++) {
            int64_t due = tick(&conns[i], now);
            next = due < next ? due : next;
        }
        int n = wait_until(epfd, events, 256, next, &during_wait); /* SIGINT, SIGTERM let in meanwhile */
        for (int e = 0; e < n; e++) {
            struct conn *c = &conns[(uint32_t)events[e].data.u64];
            if (c->state != DOWN && c->gen == (uint32_t)(events[e].data.u64 >> 32))
                handle(c, events[e].events);
        }
    }
    // END loop

    now = now_ns(); /* a signal may have cut the last wait short */
    double elapsed = measuring ? (double)((now < end_ns ? now : end_ns) - measure_start) / 1e9 : 0;
    report(elapsed);
    if (!ever_connected) {
        fprintf(stderr, "iom-echoload: no connection to %s:%d ever succeeded (%s)\n", arg.host, arg.port,
                last_connect_errno ? strerror(last_connect_errno) : "no answer yet");
        return 1;
    }
    if (st.messages == 0) {
        fprintf(stderr, "iom-echoload: no message completed in the measured phase\n");
        return 1;
    }
    return 0;
}
