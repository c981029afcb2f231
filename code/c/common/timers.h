/*
 * timers.h: the deadlines of an event loop, and how long it may sleep until the next one.
 *
 * A loop that simulates work with timers (c-select/poll/epoll, c-coroutine) keeps one
 * struct timers; whatever waits embeds a struct timer and is found again with
 * timer_owner(). Every round the loop runs what is due, then asks timers_wait_ms()
 * how long poll/epoll_wait may block. The answer keeps "nothing pending" (TIMERS_NONE,
 * block until IO) apart from "due now" (0): a deadline that passes between the scan
 * and the wait must mean "don't sleep", never "sleep forever".
 */
#ifndef IOM_TIMERS_H
#define IOM_TIMERS_H

#include <stddef.h>

#define TIMERS_NONE (-1) /* no deadline pending: wait for IO alone (poll's "forever") */

struct timer {
    double due_ms;       /* on the clock_ms() clock */
    struct timer *next;  /* in its list while pending */
};

struct timers {
    struct timer *pending; /* unsorted: a loop has few at a time, and a scan is cheap */
};

/* The struct that embeds timer `t` as `member`. */
#define timer_owner(t, type, member) ((type *)((char *)(t) - offsetof(type, member)))

/* Milliseconds on the monotonic clock. */
double clock_ms(void);

/* Start waiting for due_ms. */
void timers_add(struct timers *ts, struct timer *t, double due_ms);
/* Stop waiting (nothing happens if t is not pending). */
void timers_remove(struct timers *ts, struct timer *t);
/* Unlink every timer due at `now` and return them as a list through ->next (NULL: none). */
struct timer *timers_take_due(struct timers *ts, double now);
/* How long a poll may block at `now`: TIMERS_NONE with nothing pending, 0 when a deadline
 * is due (or past), else the milliseconds to the earliest one, rounded up. */
int timers_wait_ms(const struct timers *ts, double now);

#endif
