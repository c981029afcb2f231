/*
 * reactor_epoll.c: the reactor API over epoll(7). The kernel keeps the interest list,
 * so a wait costs in proportion to the ready descriptors, not the watched ones (and
 * this file keeps no table of descriptors of its own).
 * Built with -DREACTOR_EDGE (c-epoll-et), it creates its reactors edge-triggered: every
 * descriptor is registered with EPOLLET, an event then arrives only on a change, and
 * reactor_edge() tells the server to read and write until EAGAIN every time.
 */
#include "reactor.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

#ifdef REACTOR_EDGE
#define TRIGGER EPOLLET /* c-epoll-et */
#else
#define TRIGGER 0 /* level-triggered */
#endif
#define MAX_READY 1024

struct reactor {
    int epfd;
    unsigned trigger; /* 0 or EPOLLET, for every descriptor */
    struct epoll_event *ready;
};

struct reactor *reactor_create(int setsize)
{
    (void)setsize; /* the kernel keeps the interest list, at any size */
    struct reactor *r = calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    r->trigger = TRIGGER;
    r->ready = calloc(MAX_READY, sizeof *r->ready);
    r->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (r->ready == NULL || r->epfd < 0) {
        int saved = errno;
        reactor_free(r);
        errno = saved;
        return NULL;
    }
    return r;
}

void reactor_free(struct reactor *r)
{
    if (r->epfd >= 0)
        close(r->epfd);
    free(r->ready);
    free(r);
}

static int ctl(struct reactor *r, int op, int fd, int mask)
{
    struct epoll_event ev = {.events = r->trigger | ((mask & R_READABLE) ? EPOLLIN : 0) |
                                       ((mask & R_WRITABLE) ? EPOLLOUT : 0),
                             .data.fd = fd};
    return epoll_ctl(r->epfd, op, fd, &ev);
}

int reactor_add(struct reactor *r, int fd, int mask)
{
    return ctl(r, EPOLL_CTL_ADD, fd, mask);
}

int reactor_add_exclusive(struct reactor *r, int fd)
{
    struct epoll_event ev = {.events = EPOLLIN | EPOLLEXCLUSIVE, .data.fd = fd}; /* never with EPOLLET */
    return epoll_ctl(r->epfd, EPOLL_CTL_ADD, fd, &ev);
}

int reactor_set(struct reactor *r, int fd, int mask)
{
    return ctl(r, EPOLL_CTL_MOD, fd, mask);
}

int reactor_del(struct reactor *r, int fd)
{
    return epoll_ctl(r->epfd, EPOLL_CTL_DEL, fd, NULL);
}

int reactor_edge(const struct reactor *r)
{
    return r->trigger == EPOLLET;
}

int reactor_poll(struct reactor *r, struct reactor_event *events, int max, int timeout_ms)
{
    /* More ready than we take? No cursor needed here: the kernel puts a level-triggered
     * descriptor it reported back at the tail of its ready list, so successive calls go
     * round the ready ones (epoll_wait(2), NOTES), unlike our poll and select scans. */
    int n = epoll_wait(r->epfd, r->ready, max < MAX_READY ? max : MAX_READY, timeout_ms);
    if (n < 0)
        return errno == EINTR ? 0 : -1;
    for (int i = 0; i < n; i++) {
        unsigned e = r->ready[i].events;
        events[i] = (struct reactor_event){
            r->ready[i].data.fd,
            ((e & (EPOLLIN | EPOLLHUP | EPOLLERR)) ? R_READABLE : 0) | ((e & EPOLLOUT) ? R_WRITABLE : 0)};
    }
    return n;
}

const char *reactor_name(void)
{
    return TRIGGER ? "epoll-et" : "epoll";
}
