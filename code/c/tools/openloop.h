/*
 * openloop.h: what the parts of iom-openloop share (openloop.c says what the tool does).
 *
 * openloop.c           the flags, the request's bytes, setup, and the loop (main);
 * openloop_schedule.c  when requests are due, where they wait for room, when they time out,
 *                      and the bookkeeping that ends every request exactly once;
 * openloop_conn.c      the connections: opening them, writing requests, reading answers;
 * openloop_report.c    the OPENLOOP line, the summary on stderr, the --hist file.
 */
#ifndef IOM_OPENLOOP_H
#define IOM_OPENLOOP_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hist.h"

#define BUCKET_NS 100000000LL    /* the timeline's resolution: 100 ms */
#define HEAD_MAX 2048            /* a response's status line and headers */
#define FRAME_HEAD 4             /* --frame: a frame's head is its length, 4 bytes big-endian */
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

/* The run as the flags set it (openloop.c). */
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

/* What the run counted (openloop_schedule.c keeps the books). */
struct stats {
    long outcome[OUTCOMES], offered, sent, in_flight, in_flight_max, queue_max;
    long connects, connect_failures, bad_responses;
    int last_errno;
    const char *last_call;
    struct hist latency, lag;  /* ns: intended start -> answer (ok only); intended start -> taken up */
    long *done;                /* the timeline: answers per bucket */
    unsigned char *busy;       /* requests in flight at some time in the bucket */
    int buckets;
    int64_t gap_from, gap_max; /* the longest time without an answer while requests were in flight */
};

extern struct config cfg;
extern struct stats st;
extern struct conn *conns;  /* the --connections places */
extern int64_t start_ns;    /* when the schedule starts (now_ns) */
extern int64_t next_check;  /* the earliest time a connection's request can time out, or its retry is due */

static inline int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* ---- openloop_schedule.c ---- */
void schedule_init(void);                      /* the rings, the timeline, the histograms */
int64_t next_arrival(void);                    /* ns after the start: the next request's intended start */
void arrive(int64_t intended, int64_t now);    /* a request is due: in flight, or dropped */
void dispatch(int64_t now, int64_t sched_end); /* waiting (open) or new (closed) requests to connections */
int64_t expire(int64_t now);                   /* time out what is overdue; the next deadline */
int64_t queue_deadline(void);                  /* when the oldest waiting request times out; NEVER: none */
void finish(enum outcome o, int64_t intended, int64_t now); /* a request in flight ends as o */
void end_gap(int64_t now);                     /* an answer came */
void give_room(struct conn *c, int k);         /* c can take k more requests */
int bucket_of(int64_t t);                      /* the timeline's bucket of time t */
void mark_busy(int64_t from, int64_t to);      /* requests were in flight all the while */
void check_books(void);                        /* abort unless every offered request has ended once */

/* ---- openloop_conn.c ---- */
void conns_init(void);                                   /* the places, all with room; epoll */
void preconnect(void);                                   /* keep-alive: open them all before the run */
void assign(struct conn *c, int64_t intended, int64_t now); /* request `intended` to c */
void flush_assigned(int64_t now);                        /* write what assign() gave since the last call */
void drop_conn(struct conn *c, enum outcome o, int64_t now); /* close c; its requests end as o */
void conns_wait(int64_t until);                          /* wait for events until `until`; handle them */

/* ---- openloop_report.c ---- */
void report(int64_t end);                      /* the OPENLOOP line on stdout, a summary on stderr */
void write_hist(FILE *f, const char *path);    /* --hist: upper_us,count; closes f */

#endif
