/*
 * openloop_schedule.c: iom-openloop's scheduler (see openloop.c, openloop_schedule.h): when
 * each request is due, where it waits for a place with room, which place takes it, when it
 * times out; and the bookkeeping, by which every request in flight ends exactly once. It
 * calls nothing of the connections: what they must do, it returns.
 */
#define _GNU_SOURCE
#include "openloop_schedule.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "gen.h"

#define SUB_BITS 10              /* 1024 buckets per power of two: < 0.1% wide (HdrHistogram's 3 digits) */

static void give_room(struct sched *s, int place, int k);

void sched_init(struct sched *s, const struct config *cfg)
{
    long slots = (long)cfg->connections * cfg->pipeline;
    *s = (struct sched){.cfg = cfg, .timeout_ns = cfg->timeout_ns, .next_check = NEVER};
    s->books.buckets = (int)((cfg->duration_ns + cfg->timeout_ns) / BUCKET_NS) + 2;
    s->room = calloc((size_t)slots, sizeof *s->room);
    s->queue = cfg->open ? calloc((size_t)cfg->max_in_flight, sizeof *s->queue) : NULL;
    s->places = calloc((size_t)cfg->connections, sizeof *s->places);
    s->closes = calloc((size_t)cfg->connections, sizeof *s->closes);
    int64_t *rings = calloc((size_t)slots, sizeof *rings);
    s->books.done = calloc((size_t)s->books.buckets, sizeof *s->books.done);
    s->books.busy = calloc((size_t)s->books.buckets, 1);
    if (s->room == NULL || (cfg->open && s->queue == NULL) || s->places == NULL || s->closes == NULL ||
        rings == NULL || s->books.done == NULL || s->books.busy == NULL ||
        hist_init(&s->books.latency, SUB_BITS) != 0 || hist_init(&s->books.lag, SUB_BITS) != 0)
        die("calloc");
    for (int i = 0; i < cfg->connections; i++)
        s->places[i].intended = rings + (long)i * cfg->pipeline;
    for (int d = 0; d < cfg->pipeline; d++) { /* spread over the connections before pipelining */
        for (int i = 0; i < cfg->connections; i++)
            give_room(s, i, 1);
    }
}

void sched_free(struct sched *s)
{
    free(s->room);
    free(s->queue);
    if (s->places != NULL)
        free(s->places[0].intended);
    free(s->places);
    free(s->closes);
    free(s->books.done);
    free(s->books.busy);
    free(s->books.latency.counts);
    free(s->books.lag.counts);
}

void sched_start(struct sched *s, int64_t now)
{
    s->start_ns = now;
}

// BEGIN schedule
/* Offset (ns after the start) of the next request's intended start. */
int64_t sched_next_arrival(struct sched *s)
{
    if (!s->cfg->poisson)
        return (int64_t)((double)s->arrivals++ * 1e9 / s->cfg->rate);
    if (s->x == 0)
        s->x = s->cfg->seed;
    uint64_t z = (s->x += 0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
    z = (z ^ (z >> 27)) * 0x94d049bb133111eb;
    z ^= z >> 31;
    double u = (double)((z >> 11) + 1) / 9007199254740992.0; /* in (0, 1] */
    s->t += -log(u) / s->cfg->rate;                           /* an exponential gap */
    return (int64_t)(s->t * 1e9);
}
// END schedule

/* ---- the bookkeeping: every request in flight ends exactly once ---- */

int bucket_of(const struct sched *s, int64_t t)
{
    int64_t b = (t - s->start_ns) / BUCKET_NS;
    return b < 0 ? 0 : b >= s->books.buckets ? s->books.buckets - 1 : (int)b;
}

void mark_busy(struct sched *s, int64_t from, int64_t to)
{
    for (int b = bucket_of(s, from); b <= bucket_of(s, to); b++)
        s->books.busy[b] = 1;
}

long sched_in_flight(const struct sched *s)
{
    return s->books.in_flight;
}

static void enter(struct books *b, int64_t now)
{
    if (b->in_flight++ == 0)
        b->gap_from = now;
    b->in_flight_max = b->in_flight > b->in_flight_max ? b->in_flight : b->in_flight_max;
}

static void end_gap(struct books *b, int64_t now)
{
    b->gap_max = now - b->gap_from > b->gap_max ? now - b->gap_from : b->gap_max;
    b->gap_from = now;
}

/* A request in flight (or dropped on arrival) ends as o. */
static void finish(struct books *b, enum outcome o, int64_t intended, int64_t now)
{
    b->outcome[o]++;
    if (o == DROPPED)
        return;
    if (o == OK)
        hist_record(&b->latency, now - intended);
    if (--b->in_flight == 0)
        end_gap(b, now);
}

static long ended(const struct books *b)
{
    long sum = 0;
    for (int i = 0; i < OUTCOMES; i++)
        sum += b->outcome[i];
    return sum;
}

int books_balance(const struct sched *s)
{
    return ended(&s->books) == s->books.offered && s->books.in_flight == 0 && s->q_len == 0;
}

void check_books(const struct sched *s)
{
    if (!books_balance(s)) {
        fprintf(stderr, "iom-openloop: bug: outcomes add up to %ld of %ld offered, %ld in flight\n",
                ended(&s->books), s->books.offered, s->books.in_flight);
        abort();
    }
}

/* ---- room: the free request slots of the places, oldest first ---- */

static void give_room(struct sched *s, int place, int k)
{
    long size = (long)s->cfg->connections * s->cfg->pipeline;
    for (int j = 0; j < k; j++)
        s->room[(s->r_first + s->r_len++) % size] = place;
}

static int take_room(struct sched *s)
{
    int place = s->room[s->r_first];
    s->r_first = (s->r_first + 1) % ((long)s->cfg->connections * s->cfg->pipeline);
    s->r_len--;
    return place;
}

/* Every request of place p ends as o; the ring is empty after. Returns how many there were. */
static int end_all(struct sched *s, struct place *p, enum outcome o, int64_t now)
{
    int k = p->nout;
    for (int j = 0; j < k; j++)
        finish(&s->books, o, p->intended[(p->first + j) % s->cfg->pipeline], now);
    p->first = p->nout = 0;
    return k;
}

/* ---- the schedule's side: arrivals, assignments, deadlines ---- */

// BEGIN arrive
/* Request `intended` is due: in flight if there is room under --max-in-flight, else dropped. */
void sched_arrive(struct sched *s, int64_t intended, int64_t now)
{
    s->books.offered++;
    hist_record(&s->books.lag, now - intended); /* how late this loop took it up */
    if (s->books.in_flight >= s->cfg->max_in_flight) {
        finish(&s->books, DROPPED, intended, now);
        return;
    }
    enter(&s->books, now);
    s->queue[(s->q_first + s->q_len++) % s->cfg->max_in_flight] = intended;
    s->books.queue_max = s->q_len > s->books.queue_max ? s->q_len : s->books.queue_max;
}

/* A waiting request (open) or a new one (closed) goes to the oldest free room. */
int sched_assign(struct sched *s, int64_t now, int64_t sched_end, struct assignment *a)
{
    if (s->r_len == 0)
        return 0;
    int64_t intended = now;
    if (s->cfg->open) {
        if (s->q_len == 0)
            return 0;
        intended = s->queue[s->q_first];
        s->q_first = (s->q_first + 1) % s->cfg->max_in_flight;
        s->q_len--;
    } else {
        if (now >= sched_end)
            return 0;
        s->books.offered++;
        enter(&s->books, now);
    }
    struct place *p = &s->places[take_room(s)];
    p->intended[(p->first + p->nout) % s->cfg->pipeline] = intended;
    p->nout++;
    s->next_check = min64(s->next_check, intended + s->timeout_ns);
    *a = (struct assignment){.place = (int)(p - s->places), .intended = intended};
    return 1;
}
// END arrive

int64_t sched_expire(struct sched *s, int64_t now)
{
    s->ncloses = 0;
    while (s->q_len > 0 && s->queue[s->q_first] + s->timeout_ns <= now) {
        finish(&s->books, TIMEOUT, s->queue[s->q_first], now);
        s->q_first = (s->q_first + 1) % s->cfg->max_in_flight;
        s->q_len--;
    }
    if (now < s->next_check)
        return s->next_check;
    int64_t next = NEVER;
    for (int i = 0; i < s->cfg->connections; i++) {
        struct place *p = &s->places[i];
        if (p->nout > 0 && p->intended[p->first] + s->timeout_ns <= now) {
            give_room(s, i, end_all(s, p, TIMEOUT, now)); /* answers come in order: none behind it will come */
            s->closes[s->ncloses++] = i;
        }
        if (p->deferred > 0 && p->retry_ns <= now) {
            give_room(s, i, p->deferred);
            p->deferred = 0;
        }
        if (p->nout > 0)
            next = min64(next, p->intended[p->first] + s->timeout_ns);
        if (p->deferred > 0)
            next = min64(next, p->retry_ns);
    }
    return s->next_check = next;
}

int64_t sched_expire_all(struct sched *s, int64_t now)
{
    s->next_check = now;
    s->timeout_ns = 0;
    return sched_expire(s, now);
}

int64_t sched_deadline(const struct sched *s)
{
    return min64(s->next_check, s->q_len > 0 ? s->queue[s->q_first] + s->timeout_ns : NEVER);
}

/* ---- what the connections report ---- */

void sched_answered(struct sched *s, int place, int status, int64_t now)
{
    struct place *p = &s->places[place];
    int64_t intended = p->intended[p->first];
    p->first = (p->first + 1) % s->cfg->pipeline;
    p->nout--;
    p->answers++;
    s->books.done[bucket_of(s, now)]++;
    end_gap(&s->books, now);
    enum outcome o = now - intended > s->timeout_ns ? TIMEOUT : status / 100 == 2 ? OK : NON2XX;
    finish(&s->books, o, intended, now);
    give_room(s, place, 1);
}

void sched_drop(struct sched *s, int place, enum outcome o, int64_t now)
{
    struct place *p = &s->places[place];
    int k = end_all(s, p, o, now);
    if (o == CONNECT_ERROR && !s->cfg->open) { /* closed loop: no busy loop against a refusing port */
        p->deferred += k;
        p->retry_ns = now + RETRY_NS;
        s->next_check = min64(s->next_check, p->retry_ns);
    } else {
        give_room(s, place, k);
    }
}
