/*
 * c-select, c-poll, c-epoll, c-epoll-et, c-epoll-reuseport: one event loop, many backends.
 *
 * A single thread waits for readiness on every socket at once (common/reactor.h) and
 * never blocks on any one of them: sockets are non-blocking, reads and writes go until
 * EAGAIN, and simulated work (--work-ms) is a timer, not a sleep, so a request that
 * "works" for 20 ms does not stop the others. The backend is picked at link time.
 * With --pool N (c-epoll-reuseport: one per core by default), N such loops run, each
 * with its own listening socket on the same port (SO_REUSEPORT): the kernel spreads new
 * connections across them. c-epoll-et differs only in its reactor (edge-triggered), and
 * the handler asks the reactor whether it must read until EAGAIN.
 *
 * Build: make -C code/c build/c-epoll     Run: code/c/build/c-epoll --port 8080
 * Chapter: book/c/event-loops.md
 */
#define _GNU_SOURCE
#include "../common/conn.h"
#include "../common/reactor.h"
#include "../common/server.h"
#include "../common/timers.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_EVENTS 512
#ifdef REUSEPORT
#define DEFAULT_LOOPS 0 /* c-epoll-reuseport: one loop per core */
#else
#define DEFAULT_LOOPS 1
#endif

struct conn {
    int fd;
    int eof;                /* the peer half-closed: answer what came, then close */
    int mask;               /* what the reactor watches for now (changed only when needed) */
    int working;            /* a request waits for its simulated work to finish */
    struct timer work_done; /* pending while working */
    struct live link;       /* in its loop's list */
    struct conn_buf b;
};

struct loop {
    struct reactor *r;
    int lfd, setsize;
    struct conn **conns;   /* by fd */
    struct live live;      /* the same connections, to close them when the loop stops */
    struct timers timers;  /* connections whose work is pending */
};

static struct options opts;
static struct loop **loops; /* every loop, reachable until exit */

static void close_conn(struct loop *l, struct conn *c)
{
    (void)reactor_del(l->r, c->fd); /* only epoll_ctl can fail here, and close() drops fd anyway */
    close(c->fd);
    l->conns[c->fd] = NULL;
    live_remove(&c->link);
    if (c->working)
        timers_remove(&l->timers, &c->work_done);
    free(c);
}

/* Read what is there, answer it, write until EAGAIN; then watch for what comes next. */
static void handle(struct loop *l, struct conn *c)
{
    struct conn_buf *b = &c->b;
    int edge = reactor_edge(l->r); /* "ready" is said once: read until EAGAIN, always */
    for (;;) {
        int drained = c->eof || b->close_after;
        while (!drained && b->in_len < sizeof b->in) {
            size_t room = sizeof b->in - b->in_len;
            ssize_t r = read(c->fd, b->in + b->in_len, room);
            if (r > 0) {
                b->in_len += (size_t)r;
                drained = !edge && (size_t)r < room; /* level: skip the read that says EAGAIN */
            } else if (r == 0) {
                c->eof = drained = 1; /* a FIN: requests already read still get answers */
            } else if (errno == EAGAIN) {
                drained = 1;
            } else if (errno != EINTR) {
                close_conn(l, c); /* reset or error */
                return;
            }
        }
        if (!c->working && conn_take_requests(b, &opts)) { /* answer later, from the timer */
            c->working = 1;
            timers_add(&l->timers, &c->work_done, clock_ms() + opts.work_ms);
        }
        while (b->out_off < b->out_len) {
            ssize_t w = write(c->fd, b->out + b->out_off, b->out_len - b->out_off);
            if (w > 0)
                b->out_off += (size_t)w;
            else if (errno == EAGAIN)
                break;
            else if (errno != EINTR) {
                close_conn(l, c);
                return;
            }
        }
        if (b->out_off < b->out_len)
            break; /* wait for the socket */
        b->out_off = b->out_len = 0;
        if (c->working)
            break; /* wait for the work's timer */
        if (b->close_after || (c->eof && !conn_has_request(b))) {
            close_conn(l, c);
            return;
        }
        /* Go round again only for input left unread (a full buffer) or unanswered. */
        if (drained && !conn_has_request(b))
            break;
    }
    int mask = b->out_len > b->out_off ? R_WRITABLE : c->working ? R_NONE : R_READABLE;
    if (mask != c->mask) { /* one epoll_ctl per change, not per request */
        if (reactor_set(l->r, c->fd, mask) != 0) {
            close_conn(l, c);
            return;
        }
        c->mask = mask;
    }
}

static void accept_all(struct loop *l)
{
    for (;;) {
        int fd = accept4(l->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED)
                return;
            if (errno == EMFILE || errno == ENFILE) {
                fprintf(stderr, "warning: accept4: %s\n", strerror(errno));
                return;
            }
            die("accept4");
        }
        struct conn *c = fd < l->setsize ? calloc(1, sizeof *c) : NULL;
        if (c == NULL || reactor_add(l->r, fd, R_READABLE) != 0) {
            free(c); /* no memory, or the backend cannot watch it (select past 1024) */
            close(fd);
            continue;
        }
        set_nodelay(fd);
        c->fd = fd;
        c->mask = R_READABLE;
        l->conns[fd] = c;
        live_add(&l->live, &c->link);
        handle(l, c); /* the request is often already there */
    }
}

/* Finish the work of every connection whose timer expired; return how long the loop may
 * wait. Answering may start new work (a pipelined request), so the wait is computed only
 * after every due timer has run, and a deadline that passes meanwhile means "don't wait". */
static int run_timers(struct loop *l)
{
    struct timer *due;
    while ((due = timers_take_due(&l->timers, clock_ms())) != NULL) {
        while (due) {
            struct conn *c = timer_owner(due, struct conn, work_done);
            due = due->next; /* before handle(), which may add c again or free it */
            c->working = 0;
            conn_work_done(&c->b);
            handle(l, c);
        }
    }
    return timers_wait_ms(&l->timers, clock_ms());
}

// BEGIN event-loop
static void *run_loop(void *arg)
{
    struct loop *l = arg;
    struct reactor_event events[MAX_EVENTS];
    while (!stop_requested) {
        int n = reactor_poll(l->r, events, MAX_EVENTS, run_timers(l));
        if (n < 0)
            die("reactor_poll");
        for (int i = 0; i < n; i++) {
            int fd = events[i].fd;
            if (fd == l->lfd)
                accept_all(l);
            else if (l->conns[fd])
                handle(l, l->conns[fd]);
        }
    }
    return NULL;
}
// END event-loop

static struct loop *new_loop(int lfd, int setsize)
{
    struct loop *l = calloc(1, sizeof *l);
    if (l == NULL || (l->conns = calloc((size_t)setsize, sizeof *l->conns)) == NULL)
        die("calloc");
    if ((l->r = reactor_create(setsize)) == NULL)
        die("reactor_create");
    l->lfd = lfd;
    l->setsize = setsize;
    live_init(&l->live);
    if (reactor_add(l->r, lfd, R_READABLE) != 0)
        die("reactor_add(listen)");
    return l;
}

int main(int argc, char **argv)
{
    parse_options(argc, argv, &opts, " [--pool THREADS]");
    long cores = DEFAULT_LOOPS > 0 ? 0 : sysconf(_SC_NPROCESSORS_ONLN); /* asked only if needed */
    int threads = opts.pool > 0 ? opts.pool : DEFAULT_LOOPS > 0 ? DEFAULT_LOOPS : (int)(cores > 0 ? cores : 1);
    install_signals();
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        die("getrlimit");
    int setsize = rl.rlim_cur > 1000000 ? 1000000 : (int)rl.rlim_cur;

    /* Loop 0 runs on the main thread, which alone takes SIGTERM; the others block it. */
    loops = calloc((size_t)threads, sizeof *loops);
    if (loops == NULL)
        die("calloc");
    for (int i = 0; i < threads; i++) {
        loops[i] = new_loop(listen_socket(&opts, threads > 1, 1), setsize);
        if (i == 0 && opts.port == 0)
            opts.port = bound_port(loops[0]->lfd); /* the others join the port it got */
    }
    sigset_t old;
    block_stop_signals(&old); /* stop requests wake the main thread's loop only */
    for (int i = 1; i < threads; i++)
        start_thread(run_loop, loops[i]);
    restore_signal_mask(&old);
    announce_ready(loops[0]->lfd);
    run_loop(loops[0]);
    for (struct live *n; (n = live_first(&loops[0]->live)) != NULL;)
        close_conn(loops[0], live_owner(n, struct conn, link));
    return 0; /* exit() ends the other loops, and closes their connections */
}
