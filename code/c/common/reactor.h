/*
 * reactor.h: one tiny readiness API over select(2), poll(2) and epoll(7), after redis's ae.
 *
 * A backend is one small file (reactor_select.c, reactor_poll.c, reactor_epoll.c),
 * picked when the server is linked. Every backend maps its kernel flags to the same
 * mask (R_READABLE | R_WRITABLE); EINTR is not an error (reactor_poll returns 0);
 * any other failure returns -1 with errno set, for the caller to report.
 * The epoll backend built with -DREACTOR_EDGE is edge-triggered: reactor_edge() says so,
 * and the caller must then read and write until EAGAIN whenever it is told "ready".
 */
#ifndef IOM_REACTOR_H
#define IOM_REACTOR_H

// BEGIN api
#define R_NONE 0
#define R_READABLE 1
#define R_WRITABLE 2

struct reactor;

struct reactor_event {
    int fd;
    int mask;
};

/* A reactor for file descriptors below setsize. */
struct reactor *reactor_create(int setsize);
void reactor_free(struct reactor *r);
/* Start watching fd for mask; -1 with EMFILE when this backend cannot watch fd. */
int reactor_add(struct reactor *r, int fd, int mask);
/* Watch an added fd for mask instead; R_NONE keeps it registered but quiet. */
int reactor_set(struct reactor *r, int fd, int mask);
/* epoll only (c-epoll-workers): watch a listening socket that several processes' reactors share,
 * for R_READABLE, with EPOLLEXCLUSIVE: a new connection wakes one of them, not all. */
int reactor_add_exclusive(struct reactor *r, int fd);
/* Stop watching an added fd (call before close). */
int reactor_del(struct reactor *r, int fd);
/* Wait up to timeout_ms (-1: forever); fill up to max events; return their count. */
int reactor_poll(struct reactor *r, struct reactor_event *events, int max, int timeout_ms);
/* 1 if "ready" is reported once per change (edge-triggered): drain until EAGAIN, always. */
int reactor_edge(const struct reactor *r);
/* "select", "poll", "epoll" or "epoll-et". */
const char *reactor_name(void);
// END api

#endif
