/*
 * iom-idle: holds N idle keep-alive connections open against a server, while another tool
 * measures the busy ones: what does each idle connection cost an IO model?
 *
 * It opens --connections N to host:port, without blocking (epoll), at most --in-flight of
 * them connecting or waiting for their answer at a time, so that the server's accept backlog
 * is not overrun. On each it sends one keep-alive request (GET / HTTP/1.1) and reads the
 * whole answer (head and Content-Length body): the server has served it, and the connection
 * sits idle in keep-alive, as a browser's would (--no-request: connect only). Then it prints
 * one line and holds every connection it has, reading nothing, until SIGTERM or SIGINT.
 *
 * One client address has one ephemeral port range (32768-60999: 28,232 ports) towards one
 * server port, so 100,000 connections need several: the first --per-source connections are
 * bound to --source, the next to --source + 1, and so on. 127.0.0.0/8 is all loopback.
 * IP_BIND_ADDRESS_NO_PORT leaves the port to connect(), which picks it per 4-tuple: each
 * source address gets the whole range.
 *
 * Descriptors: one per connection. The soft RLIMIT_NOFILE is raised to the hard limit if it
 * is too low; a hard limit still too low exits 2 naming it (root raises it: prlimit --nofile).
 *
 * Usage: iom-idle --port P [--host 127.0.0.1] --connections N [--source 127.0.1.1]
 *        [--per-source 20000] [--in-flight 256] [--timeout-s 60] [--no-request]
 * Prints, once every connection is answered or failed, or at the --timeout-s deadline:
 *   IDLE {"connections": N, "established": .., "answered": .., "unanswered": .., "failed": ..,
 *         "held": .., "errors": {"ECONNREFUSED": ..}, "sources": ["127.0.1.1", ..], "setup_s": ..}
 * established: connects that succeeded; answered / unanswered: held connections with / still
 * without their answer (both 0 with --no-request); failed: connects and reads that failed,
 * and connects the deadline cut off (ETIMEDOUT); held + failed = connections.
 * On SIGTERM/SIGINT: IDLE_END {"held": h, "closed_by_server": c}, then exit 0.
 * Exit 1: bad arguments (with the usage) or a failed setup call; 2: too few descriptors.
 * Build: make -C code/c build/iom-idle           Tests: code/tests/test_idle.py
 * Try:   code/c/build/c-epoll --port 8080 &
 *        code/c/build/iom-idle --port 8080 --connections 1000 & sleep 2; ss -tn state established | wc -l
 */
#define _GNU_SOURCE
#include "gen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define FDS_SPARE 16        /* stdio, epoll, signalfd, and what libc may open */
#define ANSWER_MAX 4096     /* a whole answer: the book's is about 100 bytes */
#define MAX_EVENTS 256
#define SIGNAL_TAG UINT64_MAX
#define MAX_ERRNO 4096

static const char REQUEST[] = "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";

static struct {
    struct sockaddr_in server;
    struct in_addr source;   /* of the first --per-source connections; then + 1, ... */
    int connections, per_source, in_flight, no_request;
    double timeout_s;
} cfg = {.connections = -1, .per_source = 20000, .in_flight = 256, .timeout_s = 60}; /* connections -1: not given */

/* A connection connecting, or sending its request and reading its answer: at most
 * --in-flight of them. Once answered (or failed) it gives its slot back. */
enum phase { FREE, CONNECTING, SENDING, READING };
struct slot {
    enum phase phase;
    int conn;                /* index in fds[] */
    size_t sent, got;
    char answer[ANSWER_MAX];
};

static int *fds;             /* per connection: the socket, -1 once failed (or never opened) */
static struct slot *slots;
static int *free_slots, n_free;
static int epfd, sigfd;
static struct {
    int established, answered, failed;
    int errors[MAX_ERRNO + 1]; /* [0]: the server closed before its answer */
} st;

static void count_error(int err)
{
    st.failed++;
    st.errors[err > 0 && err <= MAX_ERRNO ? err : 0]++;
}

static void release(struct slot *s)
{
    s->phase = FREE;
    free_slots[n_free++] = (int)(s - slots);
}

/* The connection in slot s failed (err: its errno, 0 for a close before the answer). */
static void fail(struct slot *s, int err)
{
    if (fds[s->conn] >= 0)
        close(fds[s->conn]); /* also takes it out of the epoll set */
    fds[s->conn] = -1;
    count_error(err);
    release(s);
}

/* Done with slot s: its connection is held, out of the epoll set, never read again. */
static void hold(struct slot *s)
{
    if (epoll_ctl(epfd, EPOLL_CTL_DEL, fds[s->conn], NULL) != 0)
        die("epoll_ctl DEL");
    release(s);
}

static void watch(struct slot *s, int op, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.u64 = (uint64_t)(s - slots)};
    if (epoll_ctl(epfd, op, fds[s->conn], &ev) != 0)
        die(op == EPOLL_CTL_ADD ? "epoll_ctl ADD" : "epoll_ctl MOD");
}

/* Open connection i from its source address, in a free slot. */
static void start(int i)
{
    struct slot *s = &slots[free_slots[--n_free]];
    s->phase = CONNECTING, s->conn = i, s->sent = s->got = 0;
    int fd = fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    struct sockaddr_in from = {.sin_family = AF_INET,
                               .sin_addr.s_addr = htonl(ntohl(cfg.source.s_addr) + (uint32_t)(i / cfg.per_source))};
    if (fd < 0 || setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one) != 0 ||
        bind(fd, (struct sockaddr *)&from, sizeof from) != 0 ||
        (connect(fd, (struct sockaddr *)&cfg.server, sizeof cfg.server) != 0 && errno != EINPROGRESS)) {
        fail(s, errno);
        return;
    }
    watch(s, EPOLL_CTL_ADD, EPOLLOUT);
}

static void on_connected(struct slot *s)
{
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(fds[s->conn], SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        err = errno;
    if (err != 0) {
        fail(s, err);
        return;
    }
    st.established++;
    if (cfg.no_request) {
        hold(s);
        return;
    }
    s->phase = SENDING;
}

static void on_writable(struct slot *s)
{
    ssize_t n = send(fds[s->conn], REQUEST + s->sent, sizeof REQUEST - 1 - s->sent, MSG_NOSIGNAL);
    if (n < 0) {
        if (errno != EAGAIN && errno != EINTR)
            fail(s, errno);
        return;
    }
    s->sent += (size_t)n;
    if (s->sent == sizeof REQUEST - 1) {
        s->phase = READING;
        watch(s, EPOLL_CTL_MOD, EPOLLIN);
    }
}

/* 1 once s->answer holds a whole answer: a head, then Content-Length bytes of body. */
static int answer_complete(const struct slot *s)
{
    const char *end = memmem(s->answer, s->got, "\r\n\r\n", 4);
    if (end == NULL)
        return 0;
    size_t head = (size_t)(end - s->answer) + 4, body = 0;
    for (const char *p = memchr(s->answer, '\n', head); p != NULL && p < end;
         p = memchr(p + 1, '\n', (size_t)(end - p)))
        if (strncasecmp(p + 1, "content-length:", 15) == 0)
            body = strtoul(p + 16, NULL, 10);
    return s->got >= head + body;
}

static void on_readable(struct slot *s)
{
    ssize_t n = recv(fds[s->conn], s->answer + s->got, sizeof s->answer - s->got, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        fail(s, n < 0 ? errno : 0);
        return;
    }
    s->got += (size_t)n;
    if (answer_complete(s)) {
        st.answered++;
        hold(s);
    } else if (s->got == sizeof s->answer) {
        fail(s, EMSGSIZE); /* no end to its head */
    }
}

// BEGIN set-up
/* Open, ask and read until every connection is answered or failed, the deadline passes,
 * or a signal comes (then returns 1). What is still connecting then fails (ETIMEDOUT);
 * what waits for its answer is held unanswered. */
static int set_up(int64_t deadline_ns)
{
    struct epoll_event events[MAX_EVENTS];
    int next = 0, signalled = 0;
    while (!signalled) {
        while (next < cfg.connections && n_free > 0)
            start(next++);
        int64_t left_ns = deadline_ns - now_ns();
        if ((next == cfg.connections && n_free == cfg.in_flight) || left_ns <= 0)
            break;
        int n = epoll_wait(epfd, events, MAX_EVENTS, (int)((left_ns + 999999) / 1000000));
        if (n < 0 && errno != EINTR)
            die("epoll_wait");
        for (int k = 0; k < n; k++) {
            if (events[k].data.u64 == SIGNAL_TAG) {
                signalled = 1;
                continue;
            }
            struct slot *s = &slots[events[k].data.u64];
            if (s->phase == CONNECTING)
                on_connected(s);
            if (s->phase == SENDING)
                on_writable(s); /* a new connection's socket buffer has room: at once */
            else if (s->phase == READING)
                on_readable(s);
        }
    }
    for (int k = 0; k < cfg.in_flight; k++) {
        if (slots[k].phase == CONNECTING)
            fail(&slots[k], ETIMEDOUT);
        else if (slots[k].phase != FREE)
            hold(&slots[k]);
    }
    for (; next < cfg.connections; next++)
        count_error(ETIMEDOUT); /* never started: fds[next] stays -1 */
    return signalled;
}
// END set-up

static int held(void)
{
    int h = 0;
    for (int i = 0; i < cfg.connections; i++)
        h += fds[i] >= 0;
    return h;
}

static void report(double setup_s)
{
    int h = held();
    printf("IDLE {\"connections\": %d, \"established\": %d, \"answered\": %d, \"unanswered\": %d, "
           "\"failed\": %d, \"held\": %d, \"errors\": {",
           cfg.connections, st.established, st.answered, cfg.no_request ? 0 : h - st.answered, st.failed, h);
    const char *sep = "";
    for (int e = 0; e <= MAX_ERRNO; e++) {
        if (st.errors[e] > 0) {
            const char *name = e == 0 ? "EOF" : strerrorname_np(e);
            printf("%s\"%s\": %d", sep, name ? name : "unknown", st.errors[e]);
            sep = ", ";
        }
    }
    printf("}, \"sources\": [");
    int n_sources = cfg.connections == 0 ? 0 : (cfg.connections - 1) / cfg.per_source + 1;
    for (int k = 0; k < n_sources; k++) {
        char addr[INET_ADDRSTRLEN];
        struct in_addr a = {.s_addr = htonl(ntohl(cfg.source.s_addr) + (uint32_t)k)};
        printf("%s\"%s\"", k ? ", " : "", inet_ntop(AF_INET, &a, addr, sizeof addr));
    }
    printf("], \"setup_s\": %.3f}\n", setup_s);
    if (fflush(stdout) != 0)
        die("fflush stdout");
}

/* Which held connections has the server closed (or reset)? Read nothing: peek. */
static int closed_by_server(void)
{
    int closed = 0;
    struct pollfd *p = calloc((size_t)cfg.connections + 1, sizeof *p);
    if (p == NULL)
        die("calloc");
    int n = 0;
    for (int i = 0; i < cfg.connections; i++)
        if (fds[i] >= 0)
            p[n++] = (struct pollfd){.fd = fds[i], .events = POLLIN | POLLRDHUP};
    if (poll(p, (nfds_t)n, 0) < 0)
        die("poll");
    for (int k = 0; k < n; k++) {
        char c;
        if (p[k].revents == 0)
            continue; /* nothing came: open */
        ssize_t r = recv(p[k].fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
        closed += r == 0 || (r < 0 && errno != EAGAIN); /* 0: the server's FIN; -1: a reset */
    }
    free(p);
    return closed;
}

static void raise_fd_limit(void)
{
    rlim_t need = (rlim_t)cfg.connections + FDS_SPARE;
    struct rlimit nofile;
    if (getrlimit(RLIMIT_NOFILE, &nofile) != 0)
        die("getrlimit RLIMIT_NOFILE");
    if (nofile.rlim_cur != RLIM_INFINITY && nofile.rlim_cur < need) {
        if (nofile.rlim_max != RLIM_INFINITY && nofile.rlim_max < need) {
            fprintf(stderr, "iom-idle: RLIMIT_NOFILE: hard limit %llu descriptors, too few for %d connections "
                            "(%llu needed; as root: prlimit --nofile=%llu)\n",
                    (unsigned long long)nofile.rlim_max, cfg.connections, (unsigned long long)need,
                    (unsigned long long)need);
            exit(2);
        }
        nofile.rlim_cur = nofile.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &nofile) != 0)
            die("setrlimit RLIMIT_NOFILE");
    }
}

static void set_up_loop(void)
{
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    if (sigprocmask(SIG_BLOCK, &stop, NULL) != 0)
        die("sigprocmask");
    if ((sigfd = signalfd(-1, &stop, SFD_CLOEXEC)) < 0)
        die("signalfd");
    if ((epfd = epoll_create1(EPOLL_CLOEXEC)) < 0)
        die("epoll_create1");
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = SIGNAL_TAG};
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, sigfd, &ev) != 0)
        die("epoll_ctl ADD signalfd");
    fds = malloc((size_t)cfg.connections * sizeof *fds + 1);
    slots = calloc((size_t)cfg.in_flight, sizeof *slots);
    free_slots = malloc((size_t)cfg.in_flight * sizeof *free_slots);
    if (fds == NULL || slots == NULL || free_slots == NULL)
        die("malloc");
    for (int i = 0; i < cfg.connections; i++)
        fds[i] = -1;
    for (int k = cfg.in_flight - 1; k >= 0; k--)
        free_slots[n_free++] = k;
}

/* The addresses, which cfg takes only once the flags are checked together. */
static struct {
    const char *host, *source;
    int port; /* 0: not given */
} arg = {.host = "127.0.0.1", .source = "127.0.1.1"};

static const char USAGE[] =
    "usage: %s --port P [--host 127.0.0.1] --connections N [--source 127.0.1.1]\n"
    "       [--per-source 20000] [--in-flight 256] [--timeout-s 60] [--no-request]\n"
    "  opens N keep-alive connections (--per-source from each address from --source on), sends\n"
    "  each one request and reads its answer, prints IDLE {json}, then holds them until\n"
    "  SIGTERM/SIGINT and prints IDLE_END {\"held\": h, \"closed_by_server\": c}\n";

/* getopt_long's table: a switch sets its int itself, a flag with a value is its letter's case in take_flag. */
static const struct option OPTIONS[] = {
    {"port", required_argument, NULL, 'p'},       {"host", required_argument, NULL, 'H'},
    {"connections", required_argument, NULL, 'c'}, {"source", required_argument, NULL, 's'},
    {"per-source", required_argument, NULL, 'P'}, {"in-flight", required_argument, NULL, 'i'},
    {"timeout-s", required_argument, NULL, 't'},  {"no-request", no_argument, &cfg.no_request, 1},
    {NULL, 0, NULL, 0}};

/* One flag of the command line (take_flags, gen.h): 0 if its value is bad. */
static int take_flag(int flag, const char *value)
{
    switch (flag) {
    case 'p': return parse_int(value, 1, 65535, &arg.port);
    case 'H': arg.host = value; break;
    case 'c': return parse_int(value, 0, 10000000, &cfg.connections);
    case 's': arg.source = value; break;
    case 'P': return parse_int(value, 1, 1000000, &cfg.per_source);
    case 'i': return parse_int(value, 1, 65536, &cfg.in_flight);
    case 't': return parse_number(value, 0.001, 86400, 0, &cfg.timeout_s);
    }
    return 1;
}

int main(int argc, char **argv)
{
    if (!take_flags(argc, argv, OPTIONS, take_flag))
        bad_usage(NULL, USAGE, 1);
    cfg.server = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons((uint16_t)arg.port)};
    const char *why = optind != argc                                          ? "no arguments beyond the flags"
                      : arg.port == 0                                         ? "--port P is required"
                      : cfg.connections < 0                                   ? "--connections N is required"
                      : inet_pton(AF_INET, arg.host, &cfg.server.sin_addr) != 1 ? "--host must be an IPv4 address"
                      : inet_pton(AF_INET, arg.source, &cfg.source) != 1      ? "--source must be an IPv4 address"
                                                                              : NULL;
    if (why != NULL)
        bad_usage(why, USAGE, 1);

    raise_fd_limit();
    set_up_loop();
    int64_t t0 = now_ns();
    int signalled = set_up(t0 + (int64_t)(cfg.timeout_s * 1e9));
    report((double)(now_ns() - t0) / 1e9);

    // BEGIN hold
    struct epoll_event ev;
    while (!signalled) { /* only the signalfd is left in the set: no wakeups until the stop */
        int n = epoll_wait(epfd, &ev, 1, -1);
        if (n < 0 && errno != EINTR)
            die("epoll_wait");
        signalled = n == 1;
    }
    // END hold
    int h = held(), c = closed_by_server();
    printf("IDLE_END {\"held\": %d, \"closed_by_server\": %d}\n", h, c);
    if (fflush(stdout) != 0)
        die("fflush stdout");
    for (int i = 0; i < cfg.connections; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    free(fds), free(slots), free(free_slots);
    return 0;
}
