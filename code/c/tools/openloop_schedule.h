/*
 * openloop_schedule.h: iom-openloop's scheduler (openloop_schedule.c), all of its state in
 * one struct sched, passed to every call. It decides, and touches no socket:
 *   - when each request is due (sched_next_arrival) and whether it is taken or dropped;
 *   - which place of --connections takes which request (sched_assign: one at a time, for the
 *     caller to hand to the connections), and where requests wait for room meanwhile;
 *   - what times out (sched_expire: the places whose connection the caller must close).
 * The connections report back through two calls only: sched_answered and sched_drop. Every
 * time is in ns on one clock (now_ns in the tool, any in tests).
 */
#ifndef IOM_OPENLOOP_SCHEDULE_H
#define IOM_OPENLOOP_SCHEDULE_H

#include <stdint.h>

#include "hist.h"
#include "openloop.h"

#define RETRY_NS 100000000LL     /* closed loop: a place whose connect failed gets its room back 100 ms later */

/* What the run counted of its requests (the connections count their sockets: openloop_conn.h). */
struct books {
    long outcome[OUTCOMES], offered, in_flight, in_flight_max, queue_max;
    struct hist latency, lag;  /* ns: intended start -> answer (ok only); intended start -> taken up */
    long *done;                /* the timeline: answers per bucket */
    unsigned char *busy;       /* requests in flight at some time in the bucket */
    int buckets;
    int64_t gap_from, gap_max; /* the longest time without an answer while requests were in flight */
};

/* One place of --connections, as the scheduler sees it: the requests given to it, unanswered. */
struct place {
    int first, nout;        /* its requests, oldest first: intended[first], ... (a ring of D) */
    int64_t *intended;
    int deferred;           /* closed loop: room given back at retry_ns, after a failed connect */
    int64_t retry_ns;
    long answers;           /* responses, over all of this place's connections */
};

/* A request given to a place: the connections open it if need be and write it. */
struct assignment {
    int place;
    int64_t intended;
};

struct sched {
    const struct config *cfg;
    int64_t start_ns;       /* when the schedule starts (sched_start) */
    int64_t timeout_ns;     /* cfg's, until sched_expire_all makes everything overdue */
    int64_t next_check;     /* the earliest time a place's request can time out, or its retry is due */
    struct books books;
    struct place *places;   /* the --connections places */
    int *closes, ncloses;   /* sched_expire: the places whose connection must be closed */
    int64_t *queue;         /* open loop: intended starts waiting for room, a ring of N */
    long q_first, q_len;
    int *room;              /* a place's index once per free request slot, a ring of C x D */
    long r_first, r_len;
    long arrivals;          /* the arrivals so far (fixed rate), */
    double t;               /* the last one's time in s (Poisson), */
    uint64_t x;             /* splitmix64's state: the same --seed, the same gaps */
};

void sched_init(struct sched *s, const struct config *cfg); /* every place with room, spread before pipelined */
void sched_free(struct sched *s);
void sched_start(struct sched *s, int64_t now);         /* the schedule starts now */
int64_t sched_next_arrival(struct sched *s);            /* ns after the start: the next request's intended start */
void sched_arrive(struct sched *s, int64_t intended, int64_t now); /* a request is due: in flight, or dropped */
/* The next request that goes out now: waiting (open) or new (closed, before sched_end), to the
 * oldest free room. Recorded on its place and put in *a: 1; 0 when nothing goes out. */
int sched_assign(struct sched *s, int64_t now, int64_t sched_end, struct assignment *a);
/* End what is overdue as timeouts (the waiting ones, and every request of a place whose oldest
 * is overdue: answers come in order), give deferred room back; s->closes lists the places whose
 * connection must be closed, s->ncloses of them. Returns the next deadline (s->next_check). */
int64_t sched_expire(struct sched *s, int64_t now);
int64_t sched_expire_all(struct sched *s, int64_t now);  /* the run is over: everything is overdue */
int64_t sched_deadline(const struct sched *s);           /* the earliest deadline or retry; NEVER: none */
long sched_in_flight(const struct sched *s);             /* how many requests are in flight */
int bucket_of(const struct sched *s, int64_t t);         /* the timeline's bucket of time t */
void mark_busy(struct sched *s, int64_t from, int64_t to); /* requests were in flight all the while */
int books_balance(const struct sched *s);                /* 1 if every offered request has ended once */
void check_books(const struct sched *s);                 /* abort, saying so, unless they balance */

/* ---- what the connections report ---- */
/* The place's oldest request was answered with `status` (HTTP's; 200 for a frame). */
void sched_answered(struct sched *s, int place, int status, int64_t now);
/* The place's connection is gone: every request on it ends as o, and its room is free (closed
 * loop, o == CONNECT_ERROR: only after RETRY_NS). */
void sched_drop(struct sched *s, int place, enum outcome o, int64_t now);

#endif
