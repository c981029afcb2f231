/*
 * timers.c: see timers.h.
 */
#define _GNU_SOURCE
#include "timers.h"

#include <limits.h>
#include <math.h>
#include <time.h>

double clock_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

void timers_add(struct timers *ts, struct timer *t, double due_ms)
{
    t->due_ms = due_ms;
    t->next = ts->pending;
    ts->pending = t;
}

void timers_remove(struct timers *ts, struct timer *t)
{
    for (struct timer **p = &ts->pending; *p; p = &(*p)->next)
        if (*p == t) {
            *p = t->next;
            t->next = NULL;
            return;
        }
}

struct timer *timers_take_due(struct timers *ts, double now)
{
    struct timer *due = NULL, **tail = &due;
    for (struct timer **p = &ts->pending; *p;) {
        struct timer *t = *p;
        if (t->due_ms <= now) { /* unlink, append to the due list in deadline-list order */
            *p = t->next;
            t->next = NULL;
            *tail = t;
            tail = &t->next;
        } else {
            p = &t->next;
        }
    }
    return due;
}

// BEGIN wait
int timers_wait_ms(const struct timers *ts, double now)
{
    if (ts->pending == NULL)
        return TIMERS_NONE;
    double earliest = ts->pending->due_ms;
    for (const struct timer *t = ts->pending->next; t; t = t->next)
        if (t->due_ms < earliest)
            earliest = t->due_ms;
    double left = earliest - now;
    if (left <= 0)
        return 0; /* due already: fell due after the caller's scan */
    return left >= INT_MAX ? INT_MAX : (int)ceil(left);
}
// END wait
