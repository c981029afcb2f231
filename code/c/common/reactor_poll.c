/*
 * reactor_poll.c: the reactor API over poll(2): no descriptor limit, but the kernel
 * still scans the whole array on every call, and so do we.
 * When more descriptors are ready than the caller takes, each scan starts where the last
 * one stopped (round robin), as epoll_wait(2) does: from 0 every time, the low slots
 * would be served on every call and, with busy clients, the high ones never.
 */
#include "reactor.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>

struct reactor {
    struct pollfd *fds; /* compact array of watched descriptors */
    int *slot;          /* fd -> index in fds, or -1 */
    int count, setsize;
    int next;           /* where the next scan of fds starts */
};

struct reactor *reactor_create(int setsize)
{
    struct reactor *r = calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    r->fds = calloc((size_t)setsize, sizeof *r->fds);
    r->slot = malloc((size_t)setsize * sizeof *r->slot);
    if (r->fds == NULL || r->slot == NULL) {
        reactor_free(r);
        return NULL;
    }
    for (int i = 0; i < setsize; i++)
        r->slot[i] = -1;
    r->setsize = setsize;
    return r;
}

void reactor_free(struct reactor *r)
{
    free(r->fds);
    free(r->slot);
    free(r);
}

int reactor_add(struct reactor *r, int fd, int mask)
{
    if (fd < 0 || fd >= r->setsize) {
        errno = EMFILE;
        return -1;
    }
    int i = r->slot[fd] = r->count++;
    r->fds[i].fd = fd;
    return reactor_set(r, fd, mask);
}

int reactor_set(struct reactor *r, int fd, int mask)
{
    r->fds[r->slot[fd]].events = (short)(((mask & R_READABLE) ? POLLIN : 0) | ((mask & R_WRITABLE) ? POLLOUT : 0));
    return 0;
}

int reactor_del(struct reactor *r, int fd)
{
    int i = r->slot[fd], last = --r->count; /* move the last entry into the hole */
    r->fds[i] = r->fds[last];
    r->slot[r->fds[i].fd] = i;
    r->slot[fd] = -1;
    return 0;
}

int reactor_edge(const struct reactor *r)
{
    (void)r;
    return 0; /* poll(2) reports a level: ready for as long as it is ready */
}

int reactor_poll(struct reactor *r, struct reactor_event *events, int max, int timeout_ms)
{
    int n = poll(r->fds, (nfds_t)r->count, timeout_ms);
    if (n < 0)
        return errno == EINTR ? 0 : -1;
    /* Every slot is looked at once per call, so nothing is reported twice; what is not
     * taken now, poll reports again next time (a level). A descriptor that reactor_del
     * moves into a hole behind the start waits one round more, and it can only move
     * downwards, a finite number of times: it is never skipped for good. */
    int count = 0, i = r->next < r->count ? r->next : 0;
    for (int seen = 0; seen < r->count && count < max && n > 0; seen++) {
        short re = r->fds[i].revents;
        if (re != 0) {
            n--;
            int mask = ((re & (POLLIN | POLLHUP | POLLERR)) ? R_READABLE : 0) | ((re & POLLOUT) ? R_WRITABLE : 0);
            events[count++] = (struct reactor_event){r->fds[i].fd, mask};
            r->next = i + 1;
        }
        if (++i == r->count)
            i = 0;
    }
    return count;
}

const char *reactor_name(void)
{
    return "poll";
}
