/*
 * openloop.h: what every part of iom-openloop shares (openloop.c says what the tool does):
 * the run's settings, the ways a request ends, and the report's two entry points.
 *
 * The parts, each a file; state is passed explicitly, as redis's ae passes its event loop:
 * openloop.c           the flags, the request's bytes, setup, and the loop (main): it owns
 *                      the run (struct run: the config, the schedule, the connections);
 * openloop_schedule.c  the scheduler (openloop_schedule.h): when requests are due, where they
 *                      wait for room, which place takes which, when they time out, and the
 *                      books that end every request exactly once. It calls nothing of the
 *                      connections: it returns what they must do (a request for a place, a
 *                      place to close), and they report answers and failures back to it;
 * openloop_conn.c      the connections (openloop_conn.h): opening them, writing requests,
 *                      reading answers, over epoll;
 * openloop_report.c    the OPENLOOP line, the summary on stderr, the --hist file.
 * Its unit tests (no sockets): code/c/tests/test_openloop_schedule.c.
 */
#ifndef IOM_OPENLOOP_H
#define IOM_OPENLOOP_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define BUCKET_NS 100000000LL    /* the timeline's resolution: 100 ms */
#define HEAD_MAX 2048            /* a response's status line and headers */
#define FRAME_HEAD 4             /* --frame: a frame's head is its length, 4 bytes big-endian */
#define NEVER INT64_MAX

enum outcome { OK, NON2XX, TIMEOUT, CONNECT_ERROR, RESET, DROPPED, OUTCOMES };

/* The run as the flags set it (openloop.c); read-only once the run starts. */
struct config {
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
};

static inline int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* ---- openloop_report.c ---- */
struct sched;
struct conns;
/* The OPENLOOP line on stdout, a summary on stderr; the run ended at `end` (aborts if the books
 * do not balance). */
void report(const struct config *cfg, const struct sched *s, const struct conns *cs, int64_t end);
void write_hist(const struct sched *s, FILE *f, const char *path); /* --hist: upper_us,count; closes f */

#endif
