/*
 * openloop_conn.h: iom-openloop's connections (openloop_conn.c), all of their state in one
 * struct conns, passed to every call. They do what the scheduler decided (open a place's
 * connection and write the request it was given, close a place whose request timed out) and
 * report what the sockets did back to it (sched_answered, sched_drop: openloop_schedule.h).
 */
#ifndef IOM_OPENLOOP_CONN_H
#define IOM_OPENLOOP_CONN_H

#include <stddef.h>
#include <stdint.h>

#include "openloop.h"
#include "openloop_schedule.h"

enum state { DOWN, CONNECTING, UP };

/* One place of --connections, as a socket: reopened as often as needed. */
struct conn {
    int fd, index;
    enum state state;
    uint32_t gen, events;   /* gen: events of a socket closed since are ignored */
    int nwritten;           /* how many of its requests (from the oldest) are written completely */
    size_t unwritten;       /* bytes of its requests not written yet (the last ones) */
    int dirty;              /* requests given to it since the last flush */
    int in_body, status, close_after;
    int given, closing;     /* --close-every: requests given to this connection; the last one says close */
    long body_left;
    size_t head_len;
    char head[HEAD_MAX + 1];
};

/* What the connections counted (the requests' books are the scheduler's). */
struct conn_stats {
    long sent, connects, connect_failures, bad_responses;
    int last_errno;
    const char *last_call;
};

struct conns {
    const struct config *cfg;
    struct sched *sched;    /* where outcomes are reported */
    struct conn *c;         /* the --connections places, indexed as the scheduler's */
    int epfd;
    int *dirty, ndirty;     /* the places given requests since the last conns_flush() */
    struct conn_stats stats;
    char buf[65536];        /* what one recv() reads */
};

void conns_init(struct conns *cs, const struct config *cfg, struct sched *s); /* the places, all down; epoll */
void conns_free(struct conns *cs);                       /* close what is open; the memory */
void conns_preconnect(struct conns *cs);                 /* keep-alive: open them all before the run */
void conns_assign(struct conns *cs, int place, int64_t now); /* the place was given a request (sched_assign) */
void conns_flush(struct conns *cs, int64_t now);         /* write what conns_assign() gave since the last call */
void conns_close(struct conns *cs, int place);           /* close the place's socket (its requests have ended) */
void conns_wait(struct conns *cs, int64_t until);        /* wait for events until `until`; handle them */

#endif
