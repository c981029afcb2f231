/*
 * openloop_schedule.c: iom-openloop's schedule (see openloop.c, openloop.h): when each
 * request is due, where it waits for a connection with room, when it times out; and the
 * bookkeeping, by which every request in flight ends exactly once.
 */
#define _GNU_SOURCE
#include "openloop.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "gen.h"

#define SUB_BITS 10              /* 1024 buckets per power of two: < 0.1% wide (HdrHistogram's 3 digits) */

struct stats st;
int64_t next_check = NEVER;
static int64_t *queue;         /* open loop: intended starts waiting for room, a ring of N */
static long q_first, q_len;
static int *room;              /* a place's index once per free request slot, a ring of C x D */
static long r_first, r_len;

void schedule_init(void)
{
    st.buckets = (int)((cfg.duration_ns + cfg.timeout_ns) / BUCKET_NS) + 2;
    room = calloc((size_t)cfg.connections * (size_t)cfg.pipeline, sizeof *room);
    queue = cfg.open ? calloc((size_t)cfg.max_in_flight, sizeof *queue) : NULL;
    st.done = calloc((size_t)st.buckets, sizeof *st.done);
    st.busy = calloc((size_t)st.buckets, 1);
    if (room == NULL || (cfg.open && queue == NULL) || st.done == NULL || st.busy == NULL ||
        hist_init(&st.latency, SUB_BITS) != 0 || hist_init(&st.lag, SUB_BITS) != 0)
        die("calloc");
}

// BEGIN schedule
/* Offset (ns after the start) of the next request's intended start. */
int64_t next_arrival(void)
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

int bucket_of(int64_t t)
{
    int64_t b = (t - start_ns) / BUCKET_NS;
    return b < 0 ? 0 : b >= st.buckets ? st.buckets - 1 : (int)b;
}

void mark_busy(int64_t from, int64_t to)
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

void end_gap(int64_t now)
{
    st.gap_max = now - st.gap_from > st.gap_max ? now - st.gap_from : st.gap_max;
    st.gap_from = now;
}

void finish(enum outcome o, int64_t intended, int64_t now)
{
    st.outcome[o]++;
    if (o == DROPPED)
        return;
    if (o == OK)
        hist_record(&st.latency, now - intended);
    if (--st.in_flight == 0)
        end_gap(now);
}

void give_room(struct conn *c, int k)
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

/* ---- the schedule's side: arrivals, dispatch, deadlines ---- */

// BEGIN arrive
/* Request `intended` is due: in flight if there is room under --max-in-flight, else dropped. */
void arrive(int64_t intended, int64_t now)
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
void dispatch(int64_t now, int64_t sched_end)
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
    flush_assigned(now);
}
// END arrive

/* Requests past their deadline end as timeouts; returns the next deadline. */
int64_t expire(int64_t now)
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

int64_t queue_deadline(void)
{
    return q_len > 0 ? queue[q_first] + cfg.timeout_ns : NEVER;
}

void check_books(void)
{
    long sum = 0;
    for (int i = 0; i < OUTCOMES; i++)
        sum += st.outcome[i];
    if (sum != st.offered || st.in_flight != 0 || q_len != 0) {
        fprintf(stderr, "iom-openloop: bug: outcomes add up to %ld of %ld offered, %ld in flight\n", sum,
                st.offered, st.in_flight);
        abort();
    }
}
