/*
 * server.c: see server.h.
 */
#define _GNU_SOURCE
#include "server.h"

#include "http.h"
#include "timers.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

volatile sig_atomic_t stop_requested = 0;

_Noreturn void die(const char *call)
{
    fprintf(stderr, "error: %s: %s\n", call, strerror(errno));
    exit(EXIT_SETUP);
}

/* pthread calls return their error number instead of setting errno. */
static void check(int err, const char *call)
{
    if (err) {
        errno = err;
        die(call);
    }
}

static _Noreturn void usage(const char *prog, const char *extra)
{
    fprintf(stderr,
            "usage: %s [--port N] [--host ADDR] [--work-ms MS] [--spin-us US] [--pool N] [--backlog N]\n"
            "          [--idle-timeout-s S]%s\n"
            "  --port 0 (default) picks a free port; prints READY port=N once listening\n"
            "  --idle-timeout-s S: the blocking servers drop a connection silent S seconds (default 2;\n"
            "    0 = never); the event loops, c-coroutine and c-uring never drop one and ignore it\n",
            prog, extra ? extra : "");
    exit(EXIT_SETUP);
}

static double parse_number(const char *prog, const char *flag, const char *s, double max)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || v < 0 || v > max) {
        fprintf(stderr, "%s: %s wants a number from 0 to %g, not '%s'\n", prog, flag, max, s);
        exit(EXIT_SETUP);
    }
    return v;
}

void parse_options(int argc, char **argv, struct options *opts, const char *usage_extra)
{
    static const struct option longopts[] = {
        {"port", required_argument, NULL, 'p'},    {"host", required_argument, NULL, 'H'},
        {"work-ms", required_argument, NULL, 'w'}, {"spin-us", required_argument, NULL, 's'},
        {"pool", required_argument, NULL, 'n'},    {"backlog", required_argument, NULL, 'b'},
        {"idle-timeout-s", required_argument, NULL, 'i'}, {"db", required_argument, NULL, 'd'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
    };
    *opts = (struct options){.host = "127.0.0.1", .port = 0, .backlog = 4096, .idle_timeout_s = 2};
    int c;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'p': opts->port = (int)parse_number(argv[0], "--port", optarg, 65535); break;
        case 'H': opts->host = optarg; break;
        case 'w': opts->work_ms = parse_number(argv[0], "--work-ms", optarg, 60000); break;
        case 's': opts->spin_us = parse_number(argv[0], "--spin-us", optarg, 60e6); break;
        case 'n': opts->pool = (int)parse_number(argv[0], "--pool", optarg, 100000); break;
        case 'b': opts->backlog = (int)parse_number(argv[0], "--backlog", optarg, 1 << 20); break;
        case 'i': opts->idle_timeout_s = parse_number(argv[0], "--idle-timeout-s", optarg, 1e6); break;
        case 'd': opts->db = optarg; break;
        default: usage(argv[0], usage_extra);
        }
    }
    /* --db only where the server's usage names it: a server that would ignore it refuses it */
    if (optind != argc || (opts->db != NULL && (usage_extra == NULL || strstr(usage_extra, "--db") == NULL)))
        usage(argv[0], usage_extra);
}

/* A stop request sets the flag, which every loop checks between blocking calls. A signal
 * that lands just after the check and before the call (epoll_wait with no timeout, say)
 * would leave the server blocked with the flag set; so from the first request on, SIGALRM
 * comes back every second and interrupts whatever the main thread is blocked in (EINTR)
 * until the loop sees the flag. alarm() is async-signal-safe. */
static void on_alarm(int sig)
{
    (void)sig;
    alarm(1);
}

static void on_stop(int sig)
{
    (void)sig;
    stop_requested = 1;
    alarm(1);
}

void install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop; /* no SA_RESTART: accept() and read() return EINTR */
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGTERM, &sa, NULL) != 0 || sigaction(SIGINT, &sa, NULL) != 0)
        die("sigaction");
    sa.sa_handler = on_alarm;
    if (sigaction(SIGALRM, &sa, NULL) != 0)
        die("sigaction(SIGALRM)");
    sa.sa_handler = SIG_IGN;
    if (sigaction(SIGPIPE, &sa, NULL) != 0)
        die("sigaction(SIGPIPE)");
}

int accept_client(int listen_fd)
{
    while (!stop_requested) {
        int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd >= 0)
            return fd;
        if (errno != EINTR && errno != ECONNABORTED)
            die("accept4");
    }
    return -1;
}

void block_stop_signals(sigset_t *old)
{
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGALRM);
    check(pthread_sigmask(SIG_BLOCK, &block, old), "pthread_sigmask");
}

void restore_signal_mask(const sigset_t *old)
{
    check(pthread_sigmask(SIG_SETMASK, old, NULL), "pthread_sigmask");
}

void start_thread(void *(*fn)(void *), void *arg)
{
    pthread_t tid;
    check(pthread_create(&tid, NULL, fn, arg), "pthread_create");
    check(pthread_detach(tid), "pthread_detach");
}

int wait_for_workers(void)
{
    int status = 0, forwarded = 0, failed = 0;
    for (;;) {
        if ((stop_requested || failed) && !forwarded) {
            signal(SIGTERM, SIG_IGN); /* the group's SIGTERM is for the workers now */
            kill(0, SIGTERM);
            forwarded = 1;
        }
        pid_t pid = wait(&status); /* a stop request interrupts it (EINTR): forwarded above */
        if (pid < 0 && errno == ECHILD)
            return failed ? EXIT_SETUP : 0;
        if (pid > 0 && !stop_requested && !failed) {
            fprintf(stderr, "error: worker %d ended unexpectedly (status %d)\n", (int)pid, status);
            failed = 1;
        }
    }
}

int listen_socket(const struct options *opts, int reuseport, int nonblocking)
{
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)opts->port)};
    if (inet_pton(AF_INET, opts->host, &addr.sin_addr) != 1) {
        fprintf(stderr, "error: inet_pton: '%s' is not an IPv4 address\n", opts->host);
        exit(EXIT_SETUP);
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (nonblocking ? SOCK_NONBLOCK : 0), 0);
    if (fd < 0)
        die("socket");
    int one = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0)
        die("setsockopt(SO_REUSEADDR)");
    if (reuseport && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0)
        die("setsockopt(SO_REUSEPORT)");
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0)
        die("bind");
    if (listen(fd, opts->backlog) != 0)
        die("listen");
    return fd;
}

int bound_port(int fd)
{
    struct sockaddr_in addr;
    socklen_t len = sizeof addr;
    if (getsockname(fd, (struct sockaddr *)&addr, &len) != 0)
        die("getsockname");
    return ntohs(addr.sin_port);
}

void announce_ready(int listen_fd)
{
    printf("READY port=%d\n", bound_port(listen_fd));
    if (fflush(stdout) != 0)
        die("fflush(stdout)");
}

struct timespec timespec_ms(double ms)
{
    time_t s = (time_t)(ms / 1000);
    return (struct timespec){.tv_sec = s, .tv_nsec = (long)((ms - 1000.0 * (double)s) * 1e6)};
}

void work_sleep_ms(double ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = timespec_ms(ms);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !stop_requested)
        ;
}

void work_spin_us(double us)
{
    if (us <= 0)
        return;
    double end = clock_ms() + us / 1e3;
    while (clock_ms() < end)
        ; /* busy: the CPU is the work */
}

ssize_t write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    size_t left = n;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0) {
            if (errno == EINTR && !stop_requested)
                continue;
            return -1;
        }
        p += w;
        left -= (size_t)w;
    }
    return (ssize_t)n;
}

void set_nodelay(int fd)
{
    int one = 1; /* best effort: a socket that refuses it is still served, only slower */
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* Write out what is batched; 0, or -1 on error. */
static int flush(int fd, const struct stream_ops *io, char *out, size_t *out_len)
{
    if (*out_len > 0 && io->write_all(fd, out, *out_len) < 0)
        return -1;
    *out_len = 0;
    return 0;
}

// BEGIN serve-connection
static void serve_blocking(int fd, const struct options *opts, const struct stream_ops *io)
{
    time_t s = (time_t)opts->idle_timeout_s;
    struct timeval idle = {.tv_sec = s, .tv_usec = (suseconds_t)((opts->idle_timeout_s - (double)s) * 1e6)};
    /* A silent client must not hold a blocking server forever (nor a thread); 0 = no timeout. */
    if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &idle, sizeof idle) == 0) {
        set_nodelay(fd);
        serve_requests(fd, opts, io);
    }
    close(fd);
}

void serve_connection(int fd, const struct options *opts)
{
    static const struct stream_ops blocking = {read, write_all, work_sleep_ms, NULL};
    serve_blocking(fd, opts, &blocking);
}

void serve_connection_answered(int fd, const struct options *opts, answer_fn answer)
{
    const struct stream_ops answering = {read, write_all, work_sleep_ms, answer};
    serve_blocking(fd, opts, &answering);
}

/* A computed answer to one request, written at once (it waited on something: what came before it is already out).
 * 1 while the connection stays open. */
static int answer_one(int fd, const struct stream_ops *io, const char *buf, const struct http_request *req)
{
    static __thread char *answer; /* one per thread, made on its first computed answer */
    if (answer == NULL && (answer = malloc(ANSWER_MAX)) == NULL)
        return 0;
    int close_after = 0;
    size_t n = io->answer(buf + req->target, req->target_len, req->keep_alive, answer, ANSWER_MAX, &close_after);
    return n > 0 && io->write_all(fd, answer, n) >= 0 && !close_after && req->keep_alive;
}

void serve_requests(int fd, const struct options *opts, const struct stream_ops *io)
{
    char buf[HTTP_MAX_REQUEST], out[SERVE_OUT_SIZE];
    size_t len = 0, out_len = 0;
    for (;;) {
        struct http_request req;
        enum http_status st;
        /* Answer every complete request already read, in one write: pipelined requests
         * get their responses together, not one small segment each. */
        while ((st = http_parse(buf, len, &req)) == HTTP_OK) {
            if (io->answer != NULL) {
                if (flush(fd, io, out, &out_len) < 0 || !answer_one(fd, io, buf, &req))
                    return;
                len -= req.length;
                memmove(buf, buf + req.length, len);
                continue;
            }
            if (opts->work_ms > 0) {
                if (flush(fd, io, out, &out_len) < 0)
                    return; /* what is done goes out before the next request's work */
                io->sleep_ms(opts->work_ms);
            }
            work_spin_us(opts->spin_us);
            size_t n;
            const char *resp = http_response(req.keep_alive, &n);
            if (out_len + n > sizeof out && flush(fd, io, out, &out_len) < 0)
                return;
            memcpy(out + out_len, resp, n);
            out_len += n;
            len -= req.length;
            memmove(buf, buf + req.length, len);
            if (!req.keep_alive) {
                (void)flush(fd, io, out, &out_len);
                return;
            }
        }
        if (flush(fd, io, out, &out_len) < 0)
            return;
        if (st != HTTP_INCOMPLETE) {
            size_t n;
            const char *resp = http_error_response(st, &n);
            (void)io->write_all(fd, resp, n);
            return;
        }
        ssize_t r = io->read(fd, buf + len, sizeof buf - len);
        if (r < 0 && errno == EINTR && !stop_requested)
            continue;
        if (r <= 0)
            return; /* EOF, error, idle timeout or stop */
        len += (size_t)r;
    }
}
// END serve-connection
