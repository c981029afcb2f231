/*
 * test_openloop_schedule.c: unit tests of iom-openloop's scheduler (tools/openloop_schedule.c),
 * without a socket or a clock: each test sets up a run, plays the connections' part by hand
 * (answers, dropped connections) at times it chooses, and reads the scheduler's decisions and
 * books. The promises: arrivals land at their intended times, a seed fixes the Poisson
 * schedule, a request with no room waits and times out once, the closed loop sends only into
 * room given back, a request over --max-in-flight is dropped, and every offered request ends
 * exactly one way. The tool's black-box tests: code/tests/test_openloop.py.
 * Build and run: make -C code/c check
 */
#include "../tools/openloop_schedule.h"
#include "check.h"

#include <math.h>
#include <stdio.h>

#define MS 1000000LL
#define S 1000000000LL

/* A run's settings as the flags would make them; the tests change what they need. */
static struct config open_config(int connections, int pipeline)
{
    return (struct config){.open = 1, .connections = connections, .pipeline = pipeline, .rate = 1000, .seed = 1,
                           .max_in_flight = (long)connections * pipeline * 100, .duration_ns = 10 * S,
                           .timeout_ns = 1 * S};
}

static struct config closed_config(int connections, int pipeline)
{
    struct config cfg = open_config(connections, pipeline);
    cfg.open = 0;
    cfg.rate = 0;
    cfg.max_in_flight = (long)connections * pipeline;
    return cfg;
}

static long ended(const struct sched *s)
{
    long sum = 0;
    for (int i = 0; i < OUTCOMES; i++)
        sum += s->books.outcome[i];
    return sum;
}

/* Every request is either in flight or ended, never both, never twice. */
static int accounted(const struct sched *s)
{
    return ended(s) + s->books.in_flight == s->books.offered && s->books.in_flight >= 0;
}

/* How many requests sched_assign gives out at `now`; the last in *a. */
static int assign_all(struct sched *s, int64_t now, int64_t sched_end, struct assignment *a)
{
    int n = 0;
    struct assignment last = {.place = -1};
    while (sched_assign(s, now, sched_end, &last))
        n++;
    if (a != NULL)
        *a = last;
    return n;
}

static void test_fixed_rate_arrivals_land_at_their_intended_times(void)
{
    struct config cfg = open_config(4, 1);
    cfg.rate = 3; /* 1/3 s apart: the offsets are truncated to the ns, never accumulated */
    struct sched s;
    sched_init(&s, &cfg);
    CHECK(sched_next_arrival(&s) == 0);
    CHECK(sched_next_arrival(&s) == 333333333);
    CHECK(sched_next_arrival(&s) == 666666666);
    CHECK(sched_next_arrival(&s) == 1 * S);
    int at_i = 1;
    for (long i = 4; i < 30000; i++) /* 10,000 s on, still i / R */
        at_i &= sched_next_arrival(&s) == (int64_t)((double)i * 1e9 / 3);
    CHECK(at_i);
    sched_free(&s);

    cfg.rate = 1000;
    sched_init(&s, &cfg);
    sched_start(&s, 5 * S); /* offsets count from the start, whatever the clock says */
    for (int i = 0; i < 4; i++) {
        int64_t intended = s.start_ns + sched_next_arrival(&s);
        CHECK(intended == 5 * S + i * MS);
        sched_arrive(&s, intended, intended); /* taken up on time */
        struct assignment a;
        CHECK(sched_assign(&s, intended, s.start_ns + cfg.duration_ns, &a));
        CHECK(a.intended == intended && a.place == i); /* the room is handed out in order */
    }
    CHECK(s.books.offered == 4 && s.books.in_flight == 4 && s.books.lag.max == 0);
    sched_answered(&s, 2, 200, 5 * S + 2 * MS + 7 * MS);
    CHECK(s.books.outcome[OK] == 1 && s.books.latency.max == 7 * MS); /* latency from the intended start */
    sched_free(&s);
}

static void test_poisson_with_a_seed_is_reproducible(void)
{
    struct config cfg = open_config(1, 1);
    cfg.poisson = 1;
    cfg.seed = 42;
    struct config other = cfg;
    other.seed = 43;
    struct sched a, b, c;
    sched_init(&a, &cfg);
    sched_init(&b, &cfg);
    sched_init(&c, &other);
    int same = 1, differ = 0, rising = 1;
    int64_t last = -1, t = 0;
    const int n = 100000;
    for (int i = 0; i < n; i++) {
        t = sched_next_arrival(&a);
        int64_t tc = sched_next_arrival(&c);
        same &= t == sched_next_arrival(&b);
        differ |= t != tc;
        rising &= t >= last;
        last = t;
    }
    CHECK(same);   /* the same seed, the same schedule */
    CHECK(differ); /* another seed, another */
    CHECK(rising);
    CHECK(fabs((double)t / 1e9 - n / cfg.rate) < 0.02 * n / cfg.rate); /* mean gap 1 / R, within 2% */
    sched_free(&a);
    sched_free(&b);
    sched_free(&c);
}

static void test_a_request_without_room_waits_and_times_out_once(void)
{
    struct config cfg = open_config(1, 1);
    struct sched s;
    sched_init(&s, &cfg);
    sched_start(&s, 0);
    struct assignment a;
    sched_arrive(&s, 0, 0);
    CHECK(assign_all(&s, 0, 10 * S, &a) == 1 && a.place == 0 && a.intended == 0);
    sched_arrive(&s, 1 * MS, 1 * MS); /* the one place is busy: it waits here */
    CHECK(assign_all(&s, 1 * MS, 10 * S, NULL) == 0);
    CHECK(s.books.queue_max == 1 && s.books.in_flight == 2);
    CHECK(sched_deadline(&s) == 1 * S); /* the sent one's */

    sched_expire(&s, 1 * S - 1);
    CHECK(s.books.outcome[TIMEOUT] == 0 && s.ncloses == 0);
    /* the sent one times out: its place is closed and its room goes to the waiting one */
    sched_expire(&s, 1 * S);
    CHECK(s.books.outcome[TIMEOUT] == 1 && s.ncloses == 1 && s.closes[0] == 0);
    CHECK(s.places[0].nout == 0);
    CHECK(assign_all(&s, 1 * S, 10 * S, &a) == 1 && a.place == 0 && a.intended == 1 * MS);
    CHECK(sched_deadline(&s) == 1 * S + 1 * MS); /* from its intended start, not from its send */

    /* one that waits past its deadline ends in the queue, once */
    sched_arrive(&s, 2 * MS, 1 * S);
    CHECK(assign_all(&s, 1 * S, 10 * S, NULL) == 0);
    sched_expire(&s, 1 * S + 2 * MS);
    CHECK(s.books.outcome[TIMEOUT] == 3 && s.ncloses == 1);
    for (int64_t t = 1 * S + 3 * MS; t < 5 * S; t += 100 * MS)
        sched_expire(&s, t);
    CHECK(s.books.outcome[TIMEOUT] == 3 && s.ncloses == 0);
    CHECK(sched_deadline(&s) == NEVER);
    CHECK(books_balance(&s));

    /* an answer that comes after the deadline, before the scheduler looked, is a timeout too */
    sched_arrive(&s, 3 * S, 3 * S);
    CHECK(assign_all(&s, 3 * S, 10 * S, NULL) == 1);
    sched_answered(&s, 0, 200, 4 * S + 1);
    CHECK(s.books.outcome[TIMEOUT] == 4 && s.books.outcome[OK] == 0);
    CHECK(books_balance(&s));
    sched_free(&s);
}

static void test_the_closed_loop_sends_only_into_room_given_back(void)
{
    struct config cfg = closed_config(2, 1);
    cfg.timeout_ns = 20 * S; /* longer than the run: only the answers end requests here */
    struct sched s;
    sched_init(&s, &cfg);
    sched_start(&s, 0);
    int64_t end = cfg.duration_ns;
    struct assignment a;
    CHECK(assign_all(&s, 0, end, &a) == 2 && a.place == 1);
    CHECK(assign_all(&s, 1 * MS, end, NULL) == 0); /* nothing answered: nothing new */
    CHECK(s.books.offered == 2);

    sched_answered(&s, 1, 200, 5 * MS);
    CHECK(assign_all(&s, 5 * MS, end, &a) == 1 && a.place == 1 && a.intended == 5 * MS); /* latency from the send */
    CHECK(s.books.offered == 3 && s.books.outcome[OK] == 1);

    /* a refused connect: its room comes back RETRY_NS later, not at once */
    sched_drop(&s, 1, CONNECT_ERROR, 6 * MS);
    CHECK(s.books.outcome[CONNECT_ERROR] == 1);
    CHECK(assign_all(&s, 6 * MS, end, NULL) == 0);
    CHECK(sched_deadline(&s) == 6 * MS + RETRY_NS);
    sched_expire(&s, 6 * MS + RETRY_NS - 1);
    CHECK(assign_all(&s, 6 * MS + RETRY_NS - 1, end, NULL) == 0);
    sched_expire(&s, 6 * MS + RETRY_NS);
    CHECK(s.ncloses == 0); /* nothing was on it to time out */
    CHECK(assign_all(&s, 6 * MS + RETRY_NS, end, &a) == 1 && a.place == 1);

    /* a reset gives its room back at once */
    sched_drop(&s, 1, RESET, 200 * MS);
    CHECK(assign_all(&s, 200 * MS, end, &a) == 1 && a.place == 1);

    /* after the schedule's end, an answer frees room that stays free */
    sched_answered(&s, 0, 200, end);
    sched_answered(&s, 1, 503, end);
    CHECK(assign_all(&s, end, end, NULL) == 0);
    CHECK(s.books.outcome[OK] == 2 && s.books.outcome[NON2XX] == 1 && s.books.outcome[RESET] == 1);
    CHECK(s.books.offered == 5 && books_balance(&s));
    sched_free(&s);
}

static void test_over_max_in_flight_a_request_is_dropped(void)
{
    struct config cfg = open_config(1, 1);
    cfg.max_in_flight = 3;
    struct sched s;
    sched_init(&s, &cfg);
    sched_start(&s, 0);
    for (int i = 0; i < 5; i++) {
        sched_arrive(&s, i * MS, i * MS);
        assign_all(&s, i * MS, 10 * S, NULL);
    }
    CHECK(s.books.offered == 5 && s.books.outcome[DROPPED] == 2);
    CHECK(s.books.in_flight == 3 && s.books.in_flight_max == 3 && s.books.queue_max == 2);
    sched_answered(&s, 0, 200, 5 * MS); /* one ends: the next one fits */
    sched_arrive(&s, 6 * MS, 6 * MS);
    CHECK(s.books.outcome[DROPPED] == 2 && s.books.in_flight == 3);
    sched_arrive(&s, 7 * MS, 7 * MS);
    CHECK(s.books.outcome[DROPPED] == 3 && accounted(&s));
    sched_expire_all(&s, 8 * MS);
    CHECK(books_balance(&s) && s.books.outcome[TIMEOUT] == 3);
    sched_free(&s);
}

/* A deterministic stand-in for the connections: x -> the next of a 64-bit LCG. */
static unsigned next_random(uint64_t *x)
{
    *x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)(*x >> 33);
}

/* Arrivals faster than the places answer, answers with every status, resets, refused connects,
 * timeouts and drops, for 3 s of simulated time: after every step each request is in flight or
 * ended, once; at the end all have ended and the books balance. */
static void simulate(struct config cfg, uint64_t seed)
{
    struct sched s;
    sched_init(&s, &cfg);
    sched_start(&s, 0);
    int64_t end = cfg.duration_ns, next_at = cfg.open ? sched_next_arrival(&s) : NEVER;
    int steps_ok = 1;
    for (int64_t now = 0; now < end + cfg.timeout_ns; now += 1 * MS) {
        while (next_at < end && next_at <= now) {
            sched_arrive(&s, next_at, now);
            next_at = sched_next_arrival(&s);
        }
        sched_expire(&s, now);
        struct assignment a;
        while (sched_assign(&s, now, end, &a))
            steps_ok &= s.places[a.place].nout <= cfg.pipeline;
        for (int i = 0; i < cfg.connections; i++) {
            unsigned r = next_random(&seed) % 100;
            if (s.places[i].nout == 0)
                continue;
            if (r < 30)
                sched_answered(&s, i, r < 25 ? 200 : 500, now);
            else if (r == 30)
                sched_drop(&s, i, RESET, now);
            else if (r == 31)
                sched_drop(&s, i, CONNECT_ERROR, now);
        }
        steps_ok &= accounted(&s);
    }
    sched_expire_all(&s, end + cfg.timeout_ns);
    CHECK(steps_ok);
    CHECK(books_balance(&s));
    CHECK(s.books.outcome[OK] > 0 && s.books.outcome[NON2XX] > 0 && s.books.outcome[RESET] > 0);
    CHECK(s.books.outcome[CONNECT_ERROR] > 0 && s.books.outcome[TIMEOUT] > 0);
    CHECK(!cfg.open || s.books.outcome[DROPPED] > 0);
    sched_free(&s);
}

static void test_every_offered_request_ends_exactly_once(void)
{
    struct config cfg = open_config(3, 2);
    cfg.rate = 3000;
    cfg.max_in_flight = 40;
    cfg.duration_ns = 3 * S;
    cfg.timeout_ns = 50 * MS;
    simulate(cfg, 1);
    cfg.poisson = 1;
    simulate(cfg, 2);
    struct config closed = closed_config(3, 2);
    closed.duration_ns = 3 * S;
    closed.timeout_ns = 5 * MS;
    simulate(closed, 3);
}

int main(void)
{
    test_fixed_rate_arrivals_land_at_their_intended_times();
    test_poisson_with_a_seed_is_reproducible();
    test_a_request_without_room_waits_and_times_out_once();
    test_the_closed_loop_sends_only_into_room_given_back();
    test_over_max_in_flight_a_request_is_dropped();
    test_every_offered_request_ends_exactly_once();
    return checks_done("test_openloop_schedule");
}
