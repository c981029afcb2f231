/*
 * iom-openloop: an open-loop, constant-rate HTTP load generator.
 *
 * wrk and ab are closed loops: a connection sends its next request only when the last
 * answer came back, so a server that stalls also stalls its load, and the requests that
 * would have waited are never measured (coordinated omission). This generator decides
 * when each request *should* be sent, at a fixed rate, before the run starts; a request
 * that finds every connection busy waits in a queue, and its latency is counted from
 * its intended send time, as a user arriving at that moment would see it.
 *
 * Usage: iom-openloop --rate R --connections C --duration S [--timeout S] [--close] URL
 * Prints one line: OPENLOOP {"intended": ..., "completed": ..., "p99_ms": ..., ...}
 * Build: make -C code/c build/iom-openloop      Chapter: book/method/measuring.md
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct conn {
    int fd;
    int busy;            /* a request is outstanding */
    int connecting;
    double intended;     /* when its request should have been sent */
    double sent_at;      /* when it was sent (the timeout counts from here) */
    size_t len;
    char buf[16384];
};

static struct {
    double rate, duration, timeout;
    int connections, close_mode;
    struct sockaddr_in addr;
    char request[512];
    size_t request_len;
} cfg = {.timeout = 5.0};

static struct {
    long completed, non2xx, errors_connect, errors_read, errors_timeout, backlog_max;
    double *lat;        /* ms, one per completed request */
} st;

static int epfd;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static _Noreturn void die(const char *what)
{
    fprintf(stderr, "iom-openloop: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void open_conn(struct conn *c)
{
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0)
        die("socket");
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->busy = 0;
    c->len = 0;
    c->connecting = connect(c->fd, (struct sockaddr *)&cfg.addr, sizeof cfg.addr) != 0;
    if (c->connecting && errno != EINPROGRESS)
        die("connect");
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP, .data.ptr = c};
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, c->fd, &ev) != 0)
        die("epoll_ctl");
}

static void reopen(struct conn *c)
{
    epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    open_conn(c);
}

static int send_request(struct conn *c, double intended)
{
    ssize_t w = send(c->fd, cfg.request, cfg.request_len, MSG_NOSIGNAL);
    if (w != (ssize_t)cfg.request_len)
        return -1; /* a request fits any socket buffer: a short send is an error here */
    c->busy = 1;
    c->intended = intended;
    c->sent_at = now_s();
    return 0;
}

/* A complete response in c->buf? Returns its length, 0 if incomplete, -1 if garbled. */
static long response_length(struct conn *c, int *status)
{
    char *end = memmem(c->buf, c->len, "\r\n\r\n", 4);
    if (end == NULL)
        return c->len == sizeof c->buf ? -1 : 0;
    if (c->len < 12 || memcmp(c->buf, "HTTP/1.", 7) != 0)
        return -1;
    *status = atoi(c->buf + 9);
    long body = 0;
    for (char *p = c->buf; p < end; p++) {
        if ((*p == '\n') && strncasecmp(p + 1, "content-length:", 15) == 0)
            body = strtol(p + 16, NULL, 10);
    }
    long total = (long)(end - c->buf) + 4 + body;
    return (long)c->len >= total ? total : 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double pct(double p)
{
    if (st.completed == 0)
        return 0;
    long i = (long)(p / 100.0 * (double)(st.completed - 1) + 0.5);
    return st.lat[i];
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"rate", required_argument, NULL, 'r'},     {"connections", required_argument, NULL, 'c'},
        {"duration", required_argument, NULL, 'd'}, {"timeout", required_argument, NULL, 't'},
        {"close", no_argument, NULL, 'x'},          {NULL, 0, NULL, 0}};
    int o;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case 'r': cfg.rate = atof(optarg); break;
        case 'c': cfg.connections = atoi(optarg); break;
        case 'd': cfg.duration = atof(optarg); break;
        case 't': cfg.timeout = atof(optarg); break;
        case 'x': cfg.close_mode = 1; break;
        default: goto usage;
        }
    }
    char host[64], path[256] = "/";
    int port = 0;
    if (optind != argc - 1 || cfg.rate <= 0 || cfg.connections <= 0 || cfg.duration <= 0 ||
        sscanf(argv[optind], "http://%63[^:/]:%d%255s", host, &port, path) < 2)
        goto usage;
    cfg.addr = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &cfg.addr.sin_addr) != 1) {
        fprintf(stderr, "iom-openloop: '%s' is not an IPv4 address\n", host);
        return 1;
    }
    cfg.request_len = (size_t)snprintf(cfg.request, sizeof cfg.request, "GET %s HTTP/1.1\r\nHost: %s:%d\r\n%s\r\n",
                                       path, host, port, cfg.close_mode ? "Connection: close\r\n" : "");

    long total = (long)(cfg.rate * cfg.duration);
    st.lat = calloc((size_t)total + 1, sizeof *st.lat);
    struct conn *conns = calloc((size_t)cfg.connections, sizeof *conns);
    if (st.lat == NULL || conns == NULL)
        die("calloc");
    if ((epfd = epoll_create1(EPOLL_CLOEXEC)) < 0)
        die("epoll_create1");
    for (int i = 0; i < cfg.connections; i++)
        open_conn(&conns[i]);

    // BEGIN schedule
    double start = now_s(), interval = 1.0 / cfg.rate;
    long next = 0, queued_from = 0; /* requests [queued_from, next) are due but unsent */
    struct epoll_event events[256];
    for (;;) {
        double now = now_s();
        while (next < total && start + (double)next * interval <= now)
            next++; /* request `next` is due: it joins the queue */
        for (int i = 0; i < cfg.connections && queued_from < next; i++) {
            struct conn *c = &conns[i];
            if (!c->busy && !c->connecting) {
                if (send_request(c, start + (double)queued_from * interval) == 0)
                    queued_from++;
                else {
                    st.errors_read++;
                    reopen(c);
                }
            }
        }
        if (next - queued_from > st.backlog_max)
            st.backlog_max = next - queued_from;
        int outstanding = 0;
        for (int i = 0; i < cfg.connections; i++) {
            struct conn *c = &conns[i];
            if (c->busy && now - c->sent_at > cfg.timeout) {
                st.errors_timeout++; /* give up on it, and on its connection */
                reopen(c);
            }
            outstanding += conns[i].busy;
        }
        if (next >= total && queued_from >= next && outstanding == 0)
            break;
        if (now - start > cfg.duration + cfg.timeout)
            break;
        double wait = next < total ? start + (double)next * interval - now : 0.05;
        int n = epoll_wait(epfd, events, 256, wait > 0 ? (int)(wait * 1000) : 0);
        // END schedule
        if (n < 0 && errno != EINTR)
            die("epoll_wait");
        for (int e = 0; e < n; e++) {
            struct conn *c = events[e].data.ptr;
            if (c->connecting && (events[e].events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
                int err = 0;
                socklen_t len = sizeof err;
                getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
                if (err) {
                    st.errors_connect++;
                    reopen(c);
                    continue;
                }
                c->connecting = 0;
                struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = c};
                epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
            }
            if (!(events[e].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
                continue;
            ssize_t r = recv(c->fd, c->buf + c->len, sizeof c->buf - c->len, 0);
            if (r > 0)
                c->len += (size_t)r;
            int status = 0;
            long rl = c->busy ? response_length(c, &status) : 0;
            if (rl > 0) {
                st.lat[st.completed++] = (now_s() - c->intended) * 1000.0;
                if (status < 200 || status > 299)
                    st.non2xx++;
                c->busy = 0;
                memmove(c->buf, c->buf + rl, c->len - (size_t)rl);
                c->len -= (size_t)rl;
                if (cfg.close_mode)
                    reopen(c);
            } else if (rl < 0 || r == 0 || (r < 0 && errno != EAGAIN)) {
                if (c->busy || rl < 0)
                    st.errors_read++;
                reopen(c);
            }
        }
    }
    double elapsed = now_s() - start;
    qsort(st.lat, (size_t)st.completed, sizeof *st.lat, cmp_double);
    double sum = 0;
    for (long i = 0; i < st.completed; i++)
        sum += st.lat[i];
    printf("OPENLOOP {\"rate\": %g, \"intended\": %ld, \"sent\": %ld, \"completed\": %ld, \"duration_s\": %.6f, "
           "\"non2xx\": %ld, \"errors_connect\": %ld, \"errors_read\": %ld, \"errors_timeout\": %ld, "
           "\"backlog_max\": %ld, \"mean_ms\": %.4f, \"p50_ms\": %.4f, \"p90_ms\": %.4f, \"p99_ms\": %.4f, "
           "\"p99_9_ms\": %.4f, \"max_ms\": %.4f}\n",
           cfg.rate, total, queued_from, st.completed, elapsed, st.non2xx, st.errors_connect, st.errors_read,
           st.errors_timeout, st.backlog_max, st.completed ? sum / (double)st.completed : 0, pct(50), pct(90),
           pct(99), pct(99.9), st.completed ? st.lat[st.completed - 1] : 0);
    return 0;
usage:
    fprintf(stderr, "usage: %s --rate R --connections C --duration S [--timeout S] [--close] http://127.0.0.1:PORT/\n",
            argv[0]);
    return 1;
}
