/*
 * test_timers.c: unit tests of common/timers.c, the deadline list of the event loops.
 *
 * The case that matters is the one c-epoll once hung on: a deadline that falls due
 * after the loop ran its due timers and before it computed its wait. The old loop
 * returned -1 (wait forever) for it; with every connection parked on a timer, nothing
 * ever woke the loop again. Build and run: make -C code/c check
 */
#include "../common/timers.h"
#include "check.h"

#include <stdio.h>
#include <stdlib.h>

struct waiter {
    int id;
    struct timer timer;
};

static int count(const struct timer *t)
{
    int n = 0;
    for (; t; t = t->next)
        n++;
    return n;
}

static void test_nothing_pending_waits_for_io(void)
{
    struct timers ts = {0};
    CHECK(timers_wait_ms(&ts, 1000.0) == TIMERS_NONE);
    CHECK(timers_take_due(&ts, 1000.0) == NULL);
}

static void test_future_deadline_rounds_up(void)
{
    struct timers ts = {0};
    struct waiter a = {.id = 1}, b = {.id = 2};
    timers_add(&ts, &a.timer, 1020.0);
    timers_add(&ts, &b.timer, 1005.2);
    CHECK(timers_wait_ms(&ts, 1000.0) == 6);   /* 5.2 ms: never wake before it is due */
    CHECK(timers_wait_ms(&ts, 1005.0) == 1);   /* 0.2 ms: 1, not 0 (no busy loop) */
    CHECK(timers_wait_ms(&ts, 1000.0 - 1e9) > 0);
}

/* The hang: the loop scanned at t=1000 (nothing due), then a deadline passed before it
 * computed its wait at t=1000.3. That must be "due now" (0), never "none" (-1). */
static void test_deadline_passed_after_the_scan_is_due_now(void)
{
    struct timers ts = {0};
    struct waiter a = {.id = 1};
    timers_add(&ts, &a.timer, 1000.1);
    CHECK(timers_take_due(&ts, 1000.0) == NULL);
    CHECK(timers_wait_ms(&ts, 1000.3) == 0);
    CHECK(timers_wait_ms(&ts, 1000.1) == 0); /* due exactly now */
    /* with others still in the future, and the passed one not first in the list */
    struct waiter b = {.id = 2};
    timers_add(&ts, &b.timer, 1040.0);
    CHECK(timers_wait_ms(&ts, 1000.3) == 0);
}

static void test_take_due_takes_exactly_the_due_ones(void)
{
    struct timers ts = {0};
    struct waiter w[5];
    double due[5] = {10, 30, 20, 10, 50};
    for (int i = 0; i < 5; i++) {
        w[i].id = i;
        timers_add(&ts, &w[i].timer, due[i]);
    }
    struct timer *t = timers_take_due(&ts, 20.0);
    CHECK(count(t) == 3);
    int seen = 0;
    for (; t; t = t->next) {
        struct waiter *o = timer_owner(t, struct waiter, timer);
        CHECK(o->timer.due_ms <= 20.0);
        seen |= 1 << o->id;
    }
    CHECK(seen == (1 << 0 | 1 << 2 | 1 << 3));
    CHECK(count(ts.pending) == 2);
    CHECK(timers_wait_ms(&ts, 20.0) == 10);
    /* a taken timer can be added again at once (a pipelined request starts new work) */
    timers_add(&ts, &w[0].timer, 25.0);
    CHECK(timers_wait_ms(&ts, 20.0) == 5);
}

static void test_remove(void)
{
    struct timers ts = {0};
    struct waiter a, b, c;
    timers_add(&ts, &a.timer, 5);
    timers_add(&ts, &b.timer, 1);
    timers_add(&ts, &c.timer, 9);
    timers_remove(&ts, &b.timer);
    CHECK(count(ts.pending) == 2);
    CHECK(timers_wait_ms(&ts, 0) == 5);
    timers_remove(&ts, &b.timer); /* not pending: nothing happens */
    CHECK(count(ts.pending) == 2);
    timers_remove(&ts, &a.timer);
    timers_remove(&ts, &c.timer);
    CHECK(timers_wait_ms(&ts, 0) == TIMERS_NONE);
}

static void test_clock_is_monotonic_milliseconds(void)
{
    double a = clock_ms(), b = clock_ms();
    CHECK(b >= a);
    CHECK(a > 0);
}

int main(void)
{
    test_nothing_pending_waits_for_io();
    test_future_deadline_rounds_up();
    test_deadline_passed_after_the_scan_is_due_now();
    test_take_due_takes_exactly_the_due_ones();
    test_remove();
    test_clock_is_monotonic_milliseconds();
    return checks_done("test_timers");
}
