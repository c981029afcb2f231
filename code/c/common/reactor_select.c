/*
 * reactor_select.c: the reactor API over select(2). fd_set holds FD_SETSIZE (1024)
 * descriptors, so this backend refuses larger ones: select's famous limit.
 * When more descriptors are ready than the caller takes, each scan starts after the last
 * one reported (round robin), as epoll_wait(2) does: from 0 every time, the low
 * descriptors would be served on every call and, with busy clients, the high ones never.
 */
#include "reactor.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>

#define ADDED 0x80 /* in mask[fd]: fd is watched, perhaps for nothing (R_NONE) */

struct reactor {
    fd_set rfds, wfds;
    int maxfd;
    int next; /* the descriptor the next scan starts at */
    unsigned char *mask; /* per fd: the R_ mask | ADDED; 0 = not added */
    int setsize;
};

struct reactor *reactor_create(int setsize)
{
    struct reactor *r = calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    r->setsize = setsize < FD_SETSIZE ? setsize : FD_SETSIZE;
    r->mask = calloc((size_t)r->setsize, 1);
    if (r->mask == NULL) {
        free(r);
        return NULL;
    }
    FD_ZERO(&r->rfds);
    FD_ZERO(&r->wfds);
    r->maxfd = -1;
    return r;
}

void reactor_free(struct reactor *r)
{
    free(r->mask);
    free(r);
}

int reactor_add(struct reactor *r, int fd, int mask)
{
    if (fd < 0 || fd >= r->setsize) {
        errno = EMFILE; /* select cannot watch this descriptor */
        return -1;
    }
    if (fd > r->maxfd)
        r->maxfd = fd;
    return reactor_set(r, fd, mask);
}

int reactor_set(struct reactor *r, int fd, int mask)
{
    if (mask & R_READABLE)
        FD_SET(fd, &r->rfds);
    else
        FD_CLR(fd, &r->rfds);
    if (mask & R_WRITABLE)
        FD_SET(fd, &r->wfds);
    else
        FD_CLR(fd, &r->wfds);
    r->mask[fd] = (unsigned char)(mask | ADDED);
    return 0;
}

int reactor_del(struct reactor *r, int fd)
{
    FD_CLR(fd, &r->rfds);
    FD_CLR(fd, &r->wfds);
    r->mask[fd] = 0;
    while (r->maxfd >= 0 && r->mask[r->maxfd] == 0)
        r->maxfd--;
    return 0;
}

int reactor_edge(const struct reactor *r)
{
    (void)r;
    return 0; /* select(2) reports a level: ready for as long as it is ready */
}

int reactor_poll(struct reactor *r, struct reactor_event *events, int max, int timeout_ms)
{
    fd_set rf, wf;
    memcpy(&rf, &r->rfds, sizeof rf); /* select overwrites its sets: copy them every call */
    memcpy(&wf, &r->wfds, sizeof wf);
    struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
    int n = select(r->maxfd + 1, &rf, &wf, NULL, timeout_ms < 0 ? NULL : &tv);
    if (n < 0)
        return errno == EINTR ? 0 : -1;
    /* Every descriptor is looked at once per call, so nothing is reported twice; what is
     * not taken now, select reports again next time (a level). */
    int count = 0, fd = r->next <= r->maxfd ? r->next : 0;
    for (int seen = 0; seen <= r->maxfd && count < max; seen++) { /* O(maxfd) every call */
        int mask = (FD_ISSET(fd, &rf) ? R_READABLE : 0) | (FD_ISSET(fd, &wf) ? R_WRITABLE : 0);
        if (mask) {
            events[count++] = (struct reactor_event){fd, mask};
            r->next = fd + 1;
        }
        if (++fd > r->maxfd)
            fd = 0;
    }
    return count;
}

const char *reactor_name(void)
{
    return "select";
}
