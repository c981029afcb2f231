/*
 * test_reactor.c: unit tests of a reactor backend (common/reactor_*.c), linked once per
 * backend: build/test_reactor_select, build/test_reactor_poll, build/test_reactor_epoll.
 *
 * The case that matters is more descriptors ready than one call takes. c-poll once
 * scanned from its first slot every call: with busy clients the low descriptors were
 * served every time and the high ones never. Here socket pairs with a byte waiting stay
 * readable (a level), and the calls must go round all of them, also while descriptors
 * are deleted (poll moves its last entry into the hole) and added.
 * Build and run: make -C code/c check
 */
#include "../common/reactor.h"
#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#define PAIRS 40
#define TAKE 7                                   /* events per call: fewer than are ready */
#define ROUND ((PAIRS + TAKE - 1) / TAKE)        /* calls to go round every ready one */
#define SETSIZE 1024

static int peer[SETSIZE]; /* the other end of each watched descriptor, to close it */

static struct reactor *create(void)
{
    struct reactor *r = reactor_create(SETSIZE);
    if (r == NULL) {
        perror("reactor_create");
        exit(1);
    }
    return r;
}

/* A descriptor that stays readable: its peer wrote a byte nobody reads. */
static int readable(struct reactor *r)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0 || write(sv[1], "x", 1) != 1) {
        perror("socketpair");
        exit(1);
    }
    peer[sv[0]] = sv[1];
    CHECK(reactor_add(r, sv[0], R_READABLE) == 0);
    return sv[0];
}

static void drop(struct reactor *r, int fd)
{
    CHECK(reactor_del(r, fd) == 0);
    close(fd);
    close(peer[fd]);
}

/* One call; counts what it reported in seen[fd], and checks it reported nothing twice. */
static void poll_once(struct reactor *r, int *seen)
{
    struct reactor_event ev[TAKE];
    int n = reactor_poll(r, ev, TAKE, 0), once[SETSIZE] = {0};
    CHECK(n == TAKE);
    for (int i = 0; i < n; i++) {
        CHECK(ev[i].mask == R_READABLE);
        CHECK(once[ev[i].fd]++ == 0);
        seen[ev[i].fd]++;
    }
}

/* PAIRS ready, TAKE per call: the first calls report each one once, then go round again. */
static void test_calls_go_round_the_ready_ones(void)
{
    struct reactor *r = create();
    int fds[PAIRS], seen[SETSIZE] = {0};
    for (int i = 0; i < PAIRS; i++)
        fds[i] = readable(r);
    for (int call = 0; call < PAIRS / TAKE; call++)
        poll_once(r, seen);
    for (int i = 0; i < PAIRS; i++)
        CHECK(seen[fds[i]] <= 1); /* nobody twice before everybody once */
    poll_once(r, seen);
    for (int i = 0; i < PAIRS; i++)
        CHECK(seen[fds[i]] >= 1); /* everybody within ROUND calls */
    for (int i = 0; i < PAIRS; i++)
        drop(r, fds[i]);
    reactor_free(r);
}

/* Every call, one descriptor it reported is deleted and a new ready one added: poll moves
 * its last entry into the hole, often behind where the next scan starts. No descriptor
 * may wait more than two rounds, and a deleted one is never reported again. */
static void test_deletes_and_adds_skip_nobody(void)
{
    struct reactor *r = create();
    int waited[SETSIZE] = {0}, live[SETSIZE] = {0}, longest = 0; /* waited: calls since reported */
    for (int i = 0; i < PAIRS; i++)
        live[readable(r)] = 1;
    for (int call = 0; call < 50 * ROUND; call++) {
        struct reactor_event ev[TAKE];
        int n = reactor_poll(r, ev, TAKE, 0);
        CHECK(n == TAKE);
        for (int fd = 0; fd < SETSIZE; fd++)
            waited[fd]++;
        for (int i = 0; i < n; i++) {
            CHECK(live[ev[i].fd]);
            waited[ev[i].fd] = 0;
        }
        int gone = ev[call % n].fd; /* a different position in the scan each time */
        live[gone] = 0;
        drop(r, gone);
        int fd = readable(r); /* select reuses the lowest free number: often behind */
        live[fd] = 1;
        waited[fd] = 0;
        for (int f = 0; f < SETSIZE; f++)
            if (live[f] && waited[f] > longest)
                longest = waited[f];
    }
    CHECK(longest <= 2 * ROUND);
    for (int fd = 0; fd < SETSIZE; fd++)
        if (live[fd])
            drop(r, fd);
    reactor_free(r);
}

int main(void)
{
    test_calls_go_round_the_ready_ones();
    test_deletes_and_adds_skip_nobody();
    char name[64];
    snprintf(name, sizeof name, "test_reactor (%s)", reactor_name());
    return checks_done(name);
}
