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
 * This file: the flags, the request's bytes, setup, and the loop; openloop.h names the parts
 * (the scheduler, the connections, the report), each a file of its own, and the loop carries
 * the scheduler's decisions to the connections (close_expired, dispatch).
 * Build: make -C code/c build/iom-openloop         Driver: code/iobench/drivers.py ("openloop")
 * Try:   code/c/build/c-epoll --port 8080 &
 *        code/c/build/iom-openloop --rate 5000 --duration 5 http://127.0.0.1:8080/
 * Chapter: book/method/measuring.md           Tests: code/tests/test_openloop.py
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "gen.h"
#include "openloop.h"
#include "openloop_conn.h"
#include "openloop_schedule.h"

#define PAYLOAD_MAX 65536        /* --body-file, --frame: the most bytes a request carries */
#define FDS_SPARE 16             /* descriptors beyond the connections: stdio, epoll, --hist */

/* The run: all the state of the parts, owned here and passed to each by pointer. */
struct run {
    struct config cfg;
    struct sched sched;
    struct conns conns;
};

/* ---- the command line ---- */

/* The command line as read, and the only static that changes: getopt_long's table needs the
 * switches' ints at fixed addresses and take_flag (gen.h) has no context. main makes the run's
 * config of it, checking the flags together, and reads it no more. */
static struct {
    struct config cfg;          /* the defaults, and what the flags set directly */
    double max_in_flight, seed; /* 0 and -1: not given */
    const char *hist, *body, *frame, *content_type;
} arg = {.cfg = {.open = 1, .connections = 10, .pipeline = 1, .duration = 10, .timeout = 5, .seed = 1,
                 .content_type = "application/json", .head_max = HEAD_MAX},
         .seed = -1};

static const char USAGE[] =
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
    "  --close-every N: each connection's Nth request says Connection: close (needs --pipeline 1).\n";

/* getopt_long's table: a switch sets its int itself, a flag with a value is its letter's case in take_flag. */
static const struct option OPTIONS[] = {
    {"rate", required_argument, NULL, 'r'},        {"poisson", no_argument, &arg.cfg.poisson, 1},
    {"seed", required_argument, NULL, 's'},        {"closed", no_argument, &arg.cfg.open, 0},
    {"connections", required_argument, NULL, 'c'}, {"pipeline", required_argument, NULL, 'p'},
    {"max-in-flight", required_argument, NULL, 'm'}, {"duration", required_argument, NULL, 'd'},
    {"timeout", required_argument, NULL, 't'},     {"close", no_argument, &arg.cfg.close_mode, 1},
    {"hist", required_argument, NULL, 'H'},        {"body-file", required_argument, NULL, 'b'},
    {"content-type", required_argument, NULL, 'T'}, {"frame", required_argument, NULL, 'F'},
    {"close-every", required_argument, NULL, 'e'}, {NULL, 0, NULL, 0}};

/* One flag of the command line (take_flags, gen.h): 0 if its value is bad. */
static int take_flag(int flag, const char *value)
{
    switch (flag) {
    case 'r': return parse_number(value, 1e-3, 1e8, 0, &arg.cfg.rate);
    case 's': return parse_number(value, 0, 9007199254740992.0, 1, &arg.seed);
    case 'c': return parse_int(value, 1, 1000000, &arg.cfg.connections);
    case 'p': return parse_int(value, 1, 1024, &arg.cfg.pipeline);
    case 'm': return parse_number(value, 1, 1e8, 1, &arg.max_in_flight);
    case 'd': return parse_number(value, 0.001, 86400, 0, &arg.cfg.duration);
    case 't': return parse_number(value, 0.001, 3600, 0, &arg.cfg.timeout);
    case 'e': return parse_int(value, 2, 1000000000, &arg.cfg.close_every);
    case 'H': arg.hist = value; break;
    case 'b': arg.body = value; break;
    case 'T': arg.content_type = value; break;
    case 'F': arg.frame = value; break;
    }
    return 1;
}

/* ---- the request, and setup ---- */

/* --body-file or --frame: FILE's bytes -> cfg->payload. NULL, or why not (naming FILE, in why). */
static const char *read_payload(struct config *cfg, const char *path, char *why, size_t why_size)
{
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
    else if ((cfg->payload = malloc((size_t)sb.st_size)) == NULL)
        die("malloc");
    else if (fread(cfg->payload, 1, (size_t)sb.st_size, f) != (size_t)sb.st_size)
        err = ferror(f) ? strerror(errno) : "shorter than when it was opened";
    else
        cfg->payload_len = (size_t)sb.st_size;
    if (f != NULL && fclose(f) != 0)
        die("fclose");
    if (err == NULL)
        return NULL;
    snprintf(why, why_size, "--%s %.1024s: %s", cfg->frame ? "frame" : "body-file", path, err);
    return why;
}

/* http://IPv4:PORT/PATH -> cfg->addr and the request; 0 if it is not one. */
static int parse_url(struct config *cfg, const char *url)
{
    char host[64], port[8];
    int n = 0;
    if (sscanf(url, "http://%63[0-9.]:%7[0-9]%n", host, port, &n) != 2 || n == 0)
        return 0;
    const char *path = url[n] ? url + n : "/";
    long p = strtol(port, NULL, 10);
    if (p < 1 || p > 65535 || path[0] != '/' || strlen(path) > 1024 || strpbrk(path, " \r\n") != NULL)
        return 0;
    cfg->addr = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons((uint16_t)p)};
    if (inet_pton(AF_INET, host, &cfg->addr.sin_addr) != 1)
        return 0;
    char head[HEAD_MAX];    /* the request's head: the path is at most 1024 bytes, the type 256 */
    size_t head_len = FRAME_HEAD;
    if (cfg->frame) {
        uint32_t be = htonl((uint32_t)cfg->payload_len);
        memcpy(head, &be, FRAME_HEAD);
    } else {
        int len = snprintf(head, sizeof head, "%s %s HTTP/1.1\r\nHost: %s:%ld\r\n", cfg->payload ? "POST" : "GET",
                           path, host, p);
        if (cfg->payload)
            len += snprintf(head + len, sizeof head - (size_t)len, "Content-Type: %s\r\nContent-Length: %zu\r\n",
                            cfg->content_type, cfg->payload_len);
        /* --close-every: "close" padded to the size of "keep-alive" (spaces after a value are allowed) */
        len += snprintf(head + len, sizeof head - (size_t)len, "%s\r\n",
                        cfg->close_mode    ? "Connection: close\r\n"
                        : cfg->close_every ? "Connection: keep-alive\r\n"
                                           : "");
        head_len = (size_t)len;
    }
    cfg->request_len = head_len + cfg->payload_len;
    cfg->requests_len = cfg->request_len * (size_t)cfg->pipeline;
    if ((cfg->requests = malloc(cfg->requests_len)) == NULL)
        die("malloc");
    for (int i = 0; i < cfg->pipeline; i++) {
        char *r = cfg->requests + (size_t)i * cfg->request_len;
        memcpy(r, head, head_len);
        if (cfg->payload_len)
            memcpy(r + head_len, cfg->payload, cfg->payload_len);
    }
    if (cfg->close_every) {
        if ((cfg->closing = malloc(cfg->request_len)) == NULL)
            die("malloc");
        memcpy(cfg->closing, cfg->requests, cfg->request_len);
        char *value = memmem(cfg->closing, head_len, "Connection: keep-alive\r\n", 24);
        memcpy(value, "Connection: close     \r\n", 24);
    }
    return 1;
}

/* Enough descriptors, a fine timer slack, and the parts' memory (openloop.h). */
static void setup(struct run *r)
{
    const struct config *cfg = &r->cfg;
    struct rlimit nofile;
    if (getrlimit(RLIMIT_NOFILE, &nofile) != 0)
        die("getrlimit RLIMIT_NOFILE");
    if (nofile.rlim_cur != RLIM_INFINITY && (rlim_t)cfg->connections + FDS_SPARE > nofile.rlim_cur) {
        fprintf(stderr, "iom-openloop: getrlimit RLIMIT_NOFILE: %llu descriptors, too few for %d connections\n",
                (unsigned long long)nofile.rlim_cur, cfg->connections);
        exit(1);
    }
    if (prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0) != 0) /* wake within 1 µs of a request's time, not 50 */
        die("prctl PR_SET_TIMERSLACK");
    sched_init(&r->sched, cfg);
    conns_init(&r->conns, cfg, &r->sched);
}

/* What the flags, setup and the run allocated, given back before the process ends (ASan's
 * leak check holds the tool to it); set_up: setup() ran. */
static void run_free(struct run *r, int set_up)
{
    if (set_up) {
        conns_free(&r->conns);
        sched_free(&r->sched);
    }
    free(r->cfg.payload);
    free(r->cfg.requests);
    free(r->cfg.closing);
}

/* ---- the loop: the scheduler decides, the connections carry it out ---- */

/* The places whose requests sched_expire ended: their connections are closed. */
static void close_expired(struct run *r)
{
    for (int i = 0; i < r->sched.ncloses; i++)
        conns_close(&r->conns, r->sched.closes[i]);
}

/* The requests that go out now (waiting ones, or the closed loop's new ones), each to its
 * place's connection, written in one send per connection. */
static void dispatch(struct run *r, int64_t now, int64_t sched_end)
{
    struct assignment a;
    while (sched_assign(&r->sched, now, sched_end, &a))
        conns_assign(&r->conns, a.place, now);
    conns_flush(&r->conns, now);
}

int main(int argc, char **argv)
{
    if (!take_flags(argc, argv, OPTIONS, take_flag))
        bad_usage(NULL, USAGE, 2);
    struct run run = {.cfg = arg.cfg};
    struct config *cfg = &run.cfg;
    struct sched *s = &run.sched;
    char file_why[1200];
    cfg->seed = arg.seed < 0 ? 1 : (uint64_t)arg.seed;
    cfg->frame = arg.frame != NULL;
    const char *payload_path = cfg->frame ? arg.frame : arg.body, *content_type = arg.content_type, *file_error;
    cfg->head_max = cfg->frame ? FRAME_HEAD : HEAD_MAX;
    cfg->content_type = content_type ? content_type : cfg->content_type;
    long def_max = (long)cfg->connections * cfg->pipeline * 100;
    cfg->max_in_flight = arg.max_in_flight > 0 ? (long)arg.max_in_flight : def_max < 100000000 ? def_max : 100000000;
    const char *why = optind != argc - 1                              ? "one URL, after the flags"
                      : cfg->open && cfg->rate == 0                   ? "--rate R (or --closed) is required"
                      : !cfg->open && (cfg->rate > 0 || cfg->poisson) ? "--closed takes no --rate or --poisson"
                      : !cfg->open && arg.max_in_flight > 0           ? "--closed takes no --max-in-flight"
                      : arg.seed >= 0 && !cfg->poisson                ? "--seed needs --poisson"
                      : cfg->close_mode && cfg->pipeline > 1          ? "--close sends one request per connection: no --pipeline"
                      : cfg->close_mode && cfg->close_every           ? "--close and --close-every exclude each other"
                      : cfg->close_every && cfg->pipeline > 1         ? "--close-every sends one request at a time: no --pipeline"
                      : cfg->frame && cfg->close_every                ? "--frame has no Connection: close: no --close-every"
                      : cfg->frame && arg.body                        ? "--frame and --body-file exclude each other"
                      : cfg->frame && cfg->close_mode                 ? "--frame has no Connection: close: no --close"
                      : content_type && !arg.body                     ? "--content-type needs --body-file"
                      : content_type && (!*content_type || strlen(content_type) > 256 || strpbrk(content_type, "\r\n"))
                          ? "--content-type: one line of 1 to 256 bytes"
                      : payload_path && (file_error = read_payload(cfg, payload_path, file_why, sizeof file_why))
                          ? file_error
                      : !parse_url(cfg, argv[optind])                 ? "the URL must be http://IPv4:PORT[/PATH]"
                                                                      : NULL;
    if (why != NULL)
        bad_usage(why, USAGE, 2);
    if (!cfg->open)
        cfg->max_in_flight = (long)cfg->connections * cfg->pipeline;
    cfg->duration_ns = (int64_t)(cfg->duration * 1e9);
    cfg->timeout_ns = (int64_t)(cfg->timeout * 1e9);
    FILE *hist_file = arg.hist ? fopen(arg.hist, "w") : NULL;
    if (arg.hist && hist_file == NULL) {
        fprintf(stderr, "iom-openloop: fopen %s: %s\n", arg.hist, strerror(errno));
        run_free(&run, 0);
        return 1;
    }
    setup(&run);
    if (!cfg->close_mode)
        conns_preconnect(&run.conns);

    // BEGIN loop
    sched_start(s, now_ns());
    int64_t start_ns = s->start_ns, sched_end = start_ns + cfg->duration_ns, hard_end = sched_end + cfg->timeout_ns;
    int64_t next_at = cfg->open ? start_ns + sched_next_arrival(s) : NEVER, now = start_ns, waited_from = start_ns;
    int was_busy = 0;
    for (;;) {
        now = now_ns();
        if (was_busy)
            mark_busy(s, waited_from, now); /* in flight all through the wait */
        while (next_at < sched_end && next_at <= now) {
            sched_arrive(s, next_at, now);
            next_at = start_ns + sched_next_arrival(s);
        }
        sched_expire(s, now);
        close_expired(&run);
        dispatch(&run, now, sched_end);
        int scheduling = cfg->open ? next_at < sched_end : now < sched_end;
        if (!scheduling && sched_in_flight(s) == 0)
            break;
        if (now >= hard_end) { /* every deadline has passed: nothing is left, or it is a timeout */
            sched_expire_all(s, now);
            close_expired(&run);
            break;
        }
        if ((was_busy = sched_in_flight(s) > 0))
            mark_busy(s, now, now);
        int64_t wake = min64(sched_deadline(s), hard_end);
        wake = min64(wake, cfg->open ? next_at : scheduling ? sched_end : NEVER);
        waited_from = now;
        conns_wait(&run.conns, wake);
    }
    // END loop

    report(cfg, s, &run.conns, now);
    if (hist_file)
        write_hist(s, hist_file, arg.hist);
    run_free(&run, 1);
    return 0;
}
