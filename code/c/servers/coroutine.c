/*
 * c-coroutine: blocking-style code on user-space threads (ucontext), one per connection,
 * scheduled by an event loop: the source write-up 002's "server-4", done in full.
 *
 * Each connection runs serve() on its own small stack: the blocking servers' own loop
 * (serve_requests, common/server.c), which reads and writes as if it blocked. When a call
 * would block (EAGAIN), co_wait() records what it waits for and swapcontext()s back to
 * the scheduler, which resumes it when the reactor (common/reactor.h, the event loops'
 * API, here over epoll) says the socket is ready, or when its simulated work's timer
 * expires. All in one kernel thread: a context switch here is a few register saves, not
 * a trip through the kernel scheduler.
 *
 * Build: make -C code/c build/c-coroutine     Run: code/c/build/c-coroutine --port 8080
 * Chapter: book/c/event-loops.md ("Coroutines: blocking code, event-loop waiting")
 */
#define _GNU_SOURCE
#include "../common/conn.h"
#include "../common/reactor.h"
#include "../common/server.h"
#include "../common/timers.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <ucontext.h>
#include <unistd.h>

#define STACK_SIZE (32 * 1024)
#define MAX_EVENTS 512
#define UNWATCHED (-1) /* a socket the reactor has forgotten (a sleeper's: see on_ready) */

struct coro {
    ucontext_t ctx;
    int fd;
    int done;
    int mask;           /* what the reactor watches the socket for, or UNWATCHED */
    int waiting;        /* parked in co_wait(): the socket's readiness resumes it */
    struct timer wake;  /* pending while sleeping */
    struct live link;   /* in `coros`, so shutdown can free them */
    char stack[STACK_SIZE];
};

static struct options opts;
static ucontext_t scheduler;
static struct coro *current;
static struct timers sleepers;
static struct live coros;
static struct reactor *reactor;
static struct coro **by_fd; /* the reactor names a socket by its descriptor */
static int setsize;

/* Have the reactor watch c's socket for mask: a call per change, not per wait. */
static void watch(struct coro *c, int mask)
{
    if (mask == c->mask)
        return;
    int forgotten = c->mask == UNWATCHED;
    if ((forgotten ? reactor_add(reactor, c->fd, mask) : reactor_set(reactor, c->fd, mask)) != 0)
        die(forgotten ? "reactor_add" : "reactor_set");
    c->mask = mask;
}

// BEGIN co-wait
/* Leave the current coroutine for the scheduler, until someone resumes it. */
static void to_scheduler(void)
{
    if (swapcontext(&current->ctx, &scheduler) != 0)
        die("swapcontext");
}

/* Park the current coroutine until its socket is ready for `mask`; back to the scheduler. */
static void co_wait(int mask)
{
    watch(current, mask);
    current->waiting = 1;
    to_scheduler();
    current->waiting = 0;
}

static void co_sleep(double ms)
{
    timers_add(&sleepers, &current->wake, clock_ms() + ms);
    to_scheduler();
}

static ssize_t co_read(int fd, void *buf, size_t n)
{
    for (;;) {
        ssize_t r = read(fd, buf, n);
        if (r >= 0 || (errno != EAGAIN && errno != EINTR))
            return r;
        if (errno == EAGAIN)
            co_wait(R_READABLE);
    }
}
// END co-wait

static ssize_t co_write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    for (size_t left = n; left > 0;) {
        ssize_t w = write(fd, p, left);
        if (w > 0) {
            p += w;
            left -= (size_t)w;
        } else if (errno == EAGAIN) {
            co_wait(R_WRITABLE);
        } else if (errno != EINTR) {
            return -1;
        }
    }
    return (ssize_t)n;
}

// BEGIN serve
/* The connection's whole life: the blocking servers' own loop (common/server.c), with
 * reads, writes and the work's sleep that park this coroutine instead of the thread. */
static void serve(void)
{
    static const struct stream_ops parked = {co_read, co_write_all, co_sleep, NULL};
    serve_requests(current->fd, &opts, &parked);
    current->done = 1;
}
// END serve

static void destroy(struct coro *c)
{
    live_remove(&c->link);
    if (c->mask != UNWATCHED)
        (void)reactor_del(reactor, c->fd); /* close() would drop it anyway */
    by_fd[c->fd] = NULL;
    close(c->fd);
    free(c);
}

static void resume(struct coro *c)
{
    current = c;
    if (swapcontext(&scheduler, &c->ctx) != 0)
        die("swapcontext");
    current = NULL;
    if (c->done)
        destroy(c);
}

static void spawn(int fd)
{
    struct coro *c = fd < setsize ? calloc(1, sizeof *c) : NULL;
    if (c == NULL || reactor_add(reactor, fd, R_NONE) != 0) {
        free(c);
        close(fd);
        return;
    }
    set_nodelay(fd);
    c->fd = fd;
    c->mask = R_NONE;
    by_fd[fd] = c;
    live_add(&coros, &c->link);
    if (getcontext(&c->ctx) != 0)
        die("getcontext");
    c->ctx.uc_stack.ss_sp = c->stack;
    c->ctx.uc_stack.ss_size = sizeof c->stack;
    c->ctx.uc_link = &scheduler; /* when serve() returns, come back here */
    makecontext(&c->ctx, serve, 0);
    resume(c);
}

/* Wake every sleeper whose time has come; return how long the scheduler may wait.
 * A woken coroutine may go back to sleep at once, so the wait is computed only after
 * every due one has run, and a deadline that passes meanwhile means "don't wait". */
static int wake_sleepers(void)
{
    struct timer *due;
    while ((due = timers_take_due(&sleepers, clock_ms())) != NULL) {
        while (due) {
            struct coro *c = timer_owner(due, struct coro, wake);
            due = due->next; /* before resume(), which may put c to sleep again or free it */
            resume(c);
        }
    }
    return timers_wait_ms(&sleepers, clock_ms());
}

/* c's socket is ready: resume c if it waits for that. A sleeper sleeps on: the reactor
 * forgets its socket until it waits again, since what came (a pipelined request, or a
 * hangup, which even R_NONE reports) would otherwise be reported on every round. */
static void on_ready(struct coro *c)
{
    if (c->waiting) {
        resume(c);
        return;
    }
    if (reactor_del(reactor, c->fd) != 0)
        die("reactor_del");
    c->mask = UNWATCHED;
}

int main(int argc, char **argv)
{
    parse_options(argc, argv, &opts, NULL);
    install_signals();
    live_init(&coros);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        die("getrlimit");
    setsize = rl.rlim_cur > 1000000 ? 1000000 : (int)rl.rlim_cur;
    if ((by_fd = calloc((size_t)setsize, sizeof *by_fd)) == NULL)
        die("calloc");
    if ((reactor = reactor_create(setsize)) == NULL)
        die("reactor_create");
    int lfd = listen_socket(&opts, 0, 1);
    if (reactor_add(reactor, lfd, R_READABLE) != 0)
        die("reactor_add(listen)");
    announce_ready(lfd);

    // BEGIN scheduler
    struct reactor_event events[MAX_EVENTS];
    while (!stop_requested) {
        int n = reactor_poll(reactor, events, MAX_EVENTS, wake_sleepers());
        if (n < 0)
            die("reactor_poll");
        for (int i = 0; i < n; i++) {
            int fd = events[i].fd;
            if (fd == lfd) {
                while ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0)
                    spawn(fd);
                if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED && errno != EMFILE)
                    die("accept4");
            } else if (by_fd[fd] != NULL) {
                on_ready(by_fd[fd]);
            }
        }
    }
    // END scheduler
    sleepers.pending = NULL; /* every deadline is forgotten: its coroutine is freed below */
    for (struct live *n; (n = live_first(&coros)) != NULL;)
        destroy(live_owner(n, struct coro, link)); /* parked mid-connection: drop it and its socket */
    close(lfd);
    return 0;
}
