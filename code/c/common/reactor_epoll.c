/*
 * reactor_epoll.c: the reactor API over epoll(7). The kernel keeps the interest list,
 * so a wait costs in proportion to the ready descriptors, not the watched ones.
 * Built with -DREACTOR_EDGE it registers every descriptor edge-triggered (EPOLLET):
 * an event then arrives only on a change, and the server must read and write until
 * EAGAIN every time (ours always does).
 */
#include "reactor.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

#ifdef REACTOR_EDGE
#define EDGE EPOLLET
#define NAME "epoll-et"
#else
#define EDGE 0
#define NAME "epoll"
#endif

struct reactor {
    int epfd;
    unsigned char *registered;
    int setsize;
    struct epoll_event *ready;
};

struct reactor *reactor_create(int setsize)
{
    struct reactor *r = calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    r->registered = calloc((size_t)setsize, 1);
    r->ready = calloc(1024, sizeof *r->ready);
    r->epfd = epoll_create1(EPOLL_CLOEXEC);
    r->setsize = setsize;
    if (r->registered == NULL || r->ready == NULL || r->epfd < 0) {
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
    free(r->registered);
    free(r->ready);
    free(r);
}

int reactor_set(struct reactor *r, int fd, int mask)
{
    if (fd < 0 || fd >= r->setsize) {
        errno = EMFILE;
        return -1;
    }
    struct epoll_event ev = {.events = EDGE | ((mask & R_READABLE) ? EPOLLIN : 0) |
                                       ((mask & R_WRITABLE) ? EPOLLOUT : 0),
                             .data.fd = fd};
    int op = r->registered[fd] ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
    if (epoll_ctl(r->epfd, op, fd, &ev) != 0)
        return -1;
    r->registered[fd] = 1;
    return 0;
}

int reactor_del(struct reactor *r, int fd)
{
    if (fd < 0 || fd >= r->setsize || !r->registered[fd])
        return 0;
    r->registered[fd] = 0;
    return epoll_ctl(r->epfd, EPOLL_CTL_DEL, fd, NULL);
}

int reactor_poll(struct reactor *r, struct reactor_event *events, int max, int timeout_ms)
{
    int n = epoll_wait(r->epfd, r->ready, max < 1024 ? max : 1024, timeout_ms);
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
    return NAME;
}
