/*
 * c-select, c-poll, c-epoll, c-epoll-et, c-epoll-reuseport, c-epoll-workers: one event loop,
 * many backends.
 *
 * A single thread waits for readiness on every socket at once (common/reactor.h) and
 * never blocks on any one of them: sockets are non-blocking, reads and writes go until
 * EAGAIN, and simulated work (--work-ms) is a timer, not a sleep, so a request that
 * "works" for 20 ms does not stop the others. The backend is picked at link time.
 * With --pool N (c-epoll-reuseport: one per core by default), N such loops run, each
 * with its own listening socket on the same port (SO_REUSEPORT): the kernel spreads new
 * connections across them. c-epoll-et differs only in its reactor (edge-triggered), and
 * the handler asks the reactor whether it must read until EAGAIN.
 * c-epoll-workers (-DWORKERS) runs the same loop in --pool worker processes instead of
 * threads (default: one per CPU the server may use), as nginx does: each process has its own
 * descriptor limit, so N workers hold N times the connections of one. --share says how they
 * share the port: reuseport (default: a listening socket each, SO_REUSEPORT, the kernel
 * hashing each new connection to one), exclusive (one listening socket, inherited, watched
 * with EPOLLEXCLUSIVE: a connection wakes one waiting worker) or herd (one socket watched
 * plainly: every waiting worker wakes, and all but one find nothing to accept). SIGTERM to the
 * parent stops every worker; a worker whose parent dies stops too. With --worker-counts FILE,
 * each worker appends "WORKER i pid=P accepted=A wakeups=W empty=E" to FILE as it stops (W:
 * times its listening socket was reported ready; E: of them, times accept found nothing).
 *
 * Built with -DWITH_DB (on epoll) it is c-db-epoll, whose wait is a real database (PostgreSQL): each loop holds
 * --db-conns connections to it (default 2), non-blocking and in pipeline mode (libpq's asynchronous API, db.h), and
 * watches their sockets beside the clients'. A request for /db or /queries sends one query per row on the pipe with
 * the fewest in flight, without waiting; the loop goes on serving others, and answers the request when its last row
 * comes back. A database that is down or silent for DB_TIMEOUT_MS fails the queries in flight (503), and a pipe that
 * failed connects again, without blocking, when a request needs it, at most once a second. A client that leaves while
 * its rows are in flight is closed at once, its memory freed when the last of them returns.
 *
 * Build: make -C code/c build/c-epoll     Run: code/c/build/c-epoll --port 8080
 * Chapter: book/c/event-loops.md (c-db-epoll: book/synthesis/database.md)
 */
#define _GNU_SOURCE
#include "../common/conn.h"
#include "../common/reactor.h"
#include "../common/server.h"
#include "../common/timers.h"
#ifdef WITH_DB
#include "../common/db.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
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
    struct live link;       /* in its loop's list (a client gone while its rows are in flight: in its zombies) */
#ifdef WITH_DB
    int asking, zombie;     /* its rows are asked of the database; its client is gone */
    struct live done_link;  /* in its loop's list of answers to deliver */
    struct db_ask ask;
#endif
    struct conn_buf b;
};

struct loop {
    struct reactor *r;
    int lfd, setsize;
    long accepted, wakeups, empty; /* connections accepted; times lfd was ready, and found empty */
    struct conn **conns;   /* by fd */
    struct live live;      /* the same connections, to close them when the loop stops */
    struct timers timers;  /* connections whose work is pending */
#ifdef WITH_DB
    struct db_pipe *pipes;
    int npipes;
    struct live zombies;   /* connections whose client left while their rows were in flight */
    struct live answered;  /* connections whose rows all came back (or failed), to answer */
#endif
};

static struct options opts;
static struct loop **loops; /* every loop, reachable until exit */

static void close_conn(struct loop *l, struct conn *c)
{
    (void)reactor_del(l->r, c->fd); /* only epoll_ctl can fail here, and close() drops fd anyway */
    close(c->fd);
    l->conns[c->fd] = NULL;
    live_remove(&c->link);
#ifdef WITH_DB
    if (c->asking) { /* its queries still point at it: freed when the last one returns */
        c->zombie = 1;
        live_add(&l->zombies, &c->link);
        return;
    }
    live_remove(&c->done_link);
#endif
    if (c->working)
        timers_remove(&l->timers, &c->work_done);
    free(c);
}

#ifdef WITH_DB
/* conn.c keeps room for the largest answer in every connection's out[] (the Makefile sizes both) */
_Static_assert(CONN_OUT_RESERVE >= DB_MAX_RESPONSE && SERVE_OUT_SIZE >= CONN_OUT_RESERVE + 4096,
               "c-db-epoll's out[] must hold its largest answer");
static int db_conns = 2; /* --db-conns: each loop's connections to the database */
static void handle(struct loop *l, struct conn *c);

static int route(const char *target, size_t len, int *rows)
{
    return (int)db_route(target, len, rows);
}

/* Keep the reactor watching each pipe's socket for what it needs. A pipe that failed closed its socket, which epoll
 * forgets by itself; a socket libpq replaced is watched anew. */
static void watch_pipe(struct loop *l, struct db_pipe *p)
{
    if (p->state == PIPE_DOWN) {
        p->watched_fd = -1;
        return;
    }
    int mask = db_pipe_mask(p);
    if (p->fd == p->watched_fd && mask == p->watched_mask)
        return;
    if ((p->fd == p->watched_fd && reactor_set(l->r, p->fd, mask) == 0) || reactor_add(l->r, p->fd, mask) == 0 ||
        reactor_set(l->r, p->fd, mask) == 0) {
        p->watched_fd = p->fd;
        p->watched_mask = mask;
        return;
    }
    die("reactor_add(database)");
}

/* An ask is complete (every row came back or failed): its connection is answered after the pipe's work is done. */
static void ask_done(struct db_ask *ask, void *ctx)
{
    struct loop *l = ctx;
    struct conn *c = (struct conn *)((char *)ask - offsetof(struct conn, ask));
    live_add(&l->answered, &c->done_link);
}

/* Answer every connection whose rows are all back; free those whose client left. */
static void deliver(struct loop *l)
{
    for (struct live *n; (n = live_first(&l->answered)) != NULL;) {
        struct conn *c = live_owner(n, struct conn, done_link);
        live_remove(n);
        if (c->ask.inflight > 0)
            continue; /* failed before all its rows were sent: the others come back yet */
        c->asking = 0;
        db_stats_add(c->ask.asked_ms);
        if (c->zombie) {
            live_remove(&c->link);
            free(c);
            continue;
        }
        static __thread char answer[DB_MAX_RESPONSE];
        int close_after;
        size_t n_out = db_ask_response(&c->ask, c->b.routed == DB_ROUTE_QUERIES, c->b.keep_alive, answer,
                                       sizeof answer, &close_after);
        conn_answered(&c->b, answer, n_out, close_after || n_out == 0);
        c->working = 0;
        handle(l, c);
    }
}

/* The pipe with the fewest queries in flight; a pipe that is down starts connecting (once a second at most). */
static struct db_pipe *pick_pipe(struct loop *l)
{
    struct db_pipe *best = NULL;
    double now = clock_ms();
    for (int i = 0; i < l->npipes; i++) {
        struct db_pipe *p = &l->pipes[i];
        if (p->state == PIPE_DOWN && now >= p->retry_ms) {
            (void)db_pipe_connect(p);
            watch_pipe(l, p);
        }
        if (p->state == PIPE_READY && (best == NULL || p->count < best->count))
            best = p;
    }
    return best;
}

// BEGIN ask-rows
/* Ask the rows of c's request: a query each, sent at once. */
static void ask_rows(struct loop *l, struct conn *c)
{
    struct db_ask *ask = &c->ask;
    *ask = (struct db_ask){.want = c->b.rows, .asked_ms = clock_ms()};
    c->asking = 1;
    for (int i = 0; i < ask->want; i++) {
        struct db_pipe *p = pick_pipe(l);
        ask->ids[i] = db_random_id(&l->pipes[0].db);
        /* a row that could not be queued fails here; whichever count completes the ask (this one, or a pipe's
         * answer or failure) says it is done, exactly once */
        if ((p == NULL || db_pipe_send(p, ask, i, ask_done, l) != 0) && ++ask->failed + ask->got == ask->want)
            ask_done(ask, l);
        if (p != NULL)
            watch_pipe(l, p);
    }
}
// END ask-rows

/* A pipe's socket is ready: go on connecting, or send and read. */
static void pipe_ready(struct loop *l, struct db_pipe *p, int mask)
{
    if (p->state == PIPE_CONNECTING || p->state == PIPE_PREPARING)
        (void)db_pipe_step(p);
    else if (p->state == PIPE_READY) {
        if ((mask & R_WRITABLE) && p->want_write)
            (void)db_pipe_flush(p, ask_done, l);
        if ((mask & R_READABLE) && p->state == PIPE_READY)
            (void)db_pipe_read(p, ask_done, l);
    }
    watch_pipe(l, p);
    deliver(l);
}

/* Fail what waited too long on a pipe; return how long the loop may wait, at most `wait` (TIMERS_NONE: forever). */
static int pipe_deadlines(struct loop *l, int wait)
{
    double now = clock_ms();
    for (int i = 0; i < l->npipes; i++) {
        struct db_pipe *p = &l->pipes[i];
        double due = db_pipe_deadline(p);
        if (due == 0)
            continue;
        if (due <= now && p->state == PIPE_READY) {
            /* Silent, or did the loop not look? A loop busy sending thousands of queries may not have read for 2 s
             * while answers waited on the socket: read them first, and fail the pipe only if none had come. */
            int failed = db_pipe_read(p, ask_done, l) != 0;
            watch_pipe(l, p);
            if (failed)
                continue; /* it failed as it read, and said why */
            due = db_pipe_deadline(p);
        }
        if (due != 0 && due <= now) {
            db_pipe_fail(p, p->state == PIPE_READY ? "no answer within " DB_TIMEOUT_SAID : "connect: no answer within "
                         DB_TIMEOUT_SAID, ask_done, l);
            watch_pipe(l, p);
            continue;
        }
        if (due == 0)
            continue;
        int ms = (int)(due - now) + 1;
        if (wait == TIMERS_NONE || ms < wait)
            wait = ms;
    }
    deliver(l);
    return wait;
}

static struct db_pipe *pipe_of(struct loop *l, int fd)
{
    for (int i = 0; i < l->npipes; i++)
        if (l->pipes[i].watched_fd == fd)
            return &l->pipes[i];
    return NULL;
}
#endif

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
#ifdef WITH_DB
            if (b->routed == DB_ROUTE_STATS) { /* the counts, at once */
                char stats[256];
                size_t n_out = db_stats_response(b->keep_alive, stats, sizeof stats);
                conn_answered(b, stats, n_out, n_out == 0);
                c->working = 0;
                handle(l, c);
                return;
            }
            if (b->routed) { /* or from the database */
                ask_rows(l, c);
                deliver(l); /* rows that failed at once are answered now */
                return;     /* deliver() handled it (or freed it) */
            }
#endif
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

/* Accept every connection waiting; return how many. */
static long accept_all(struct loop *l)
{
    for (long n = 0;; n++) {
        int fd = accept4(l->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED)
                return n;
            if (errno == EMFILE || errno == ENFILE) {
                fprintf(stderr, "warning: accept4: %s\n", strerror(errno));
                return n;
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
#ifdef WITH_DB
        c->b.route = route;
        live_init(&c->done_link);
#endif
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
        int wait = run_timers(l);
#ifdef WITH_DB
        wait = pipe_deadlines(l, wait);
#endif
        int n = reactor_poll(l->r, events, MAX_EVENTS, wait);
        if (n < 0)
            die("reactor_poll");
        for (int i = 0; i < n; i++) {
            int fd = events[i].fd;
#ifdef WITH_DB
            struct db_pipe *p = pipe_of(l, fd);
            if (p != NULL) {
                pipe_ready(l, p, events[i].mask);
                continue;
            }
#endif
            if (fd == l->lfd) {
                long got = accept_all(l);
                l->wakeups++;
                l->accepted += got;
                l->empty += got == 0;
            }
            else if (l->conns[fd])
                handle(l, l->conns[fd]);
        }
    }
    return NULL;
}
// END event-loop

static struct loop *new_loop(int lfd, int setsize, int exclusive)
{
    struct loop *l = calloc(1, sizeof *l);
    if (l == NULL || (l->conns = calloc((size_t)setsize, sizeof *l->conns)) == NULL)
        die("calloc");
    if ((l->r = reactor_create(setsize)) == NULL)
        die("reactor_create");
    l->lfd = lfd;
    l->setsize = setsize;
    live_init(&l->live);
#ifdef WITH_DB
    live_init(&l->zombies);
    live_init(&l->answered);
    l->npipes = db_conns;
    if ((l->pipes = calloc((size_t)db_conns, sizeof *l->pipes)) == NULL)
        die("calloc");
    for (int i = 0; i < db_conns; i++) { /* connected before READY (a database that is down is said, and retried) */
        struct db_pipe *p = &l->pipes[i];
        p->db = (struct db){.dsn = opts.db, .seed = (unsigned)(uintptr_t)l * 2654435761u + (unsigned)i};
        p->watched_fd = -1;
        if (db_pipe_open(p) == 0)
            watch_pipe(l, p);
    }
#endif
#ifdef WORKERS
    if ((exclusive ? reactor_add_exclusive(l->r, lfd) : reactor_add(l->r, lfd, R_READABLE)) != 0)
        die(exclusive ? "epoll_ctl(EPOLLEXCLUSIVE)" : "reactor_add(listen)");
#else
    (void)exclusive;
    if (reactor_add(l->r, lfd, R_READABLE) != 0)
        die("reactor_add(listen)");
#endif
    return l;
}

static int nofile_setsize(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        die("getrlimit");
    return rl.rlim_cur > 1000000 ? 1000000 : (int)rl.rlim_cur;
}

#if defined(WORKERS) || defined(WITH_DB)
/* The value of this server's own flag (the last one given), taken out of argv before the
 * contract's flags are parsed; NULL if absent; exit 1 if it has no value. */
static const char *take_flag(int *argc, char **argv, const char *flag)
{
    const char *value = NULL;
    for (int i = 1; i < *argc; i++) {
        if (strcmp(argv[i], flag) != 0)
            continue;
        if (i + 1 >= *argc) {
            fprintf(stderr, "%s: %s needs a value\n", argv[0], flag);
            exit(EXIT_SETUP);
        }
        value = argv[i + 1];
        memmove(&argv[i], &argv[i + 2], (size_t)(*argc - i - 1) * sizeof *argv); /* argv[argc] is NULL */
        *argc -= 2;
        i--;
    }
    return value;
}
#endif

#ifdef WORKERS
enum share { SHARE_REUSEPORT, SHARE_EXCLUSIVE, SHARE_HERD };

static enum share parse_share(const char *prog, const char *v)
{
    static const char *names[] = {"reuseport", "exclusive", "herd"};
    for (int k = 0; v != NULL && k < 3; k++)
        if (strcmp(v, names[k]) == 0)
            return (enum share)k;
    if (v == NULL)
        return SHARE_REUSEPORT;
    fprintf(stderr, "%s: --share must be reuseport, exclusive or herd; got '%s'\n", prog, v);
    exit(EXIT_SETUP);
}

static const char *counts_file; /* --worker-counts */

/* One worker process: its loop until a stop is requested, then its counts on stderr. */
static _Noreturn void worker(int i, int lfd, int exclusive, pid_t parent)
{
    (void)prctl(PR_SET_PDEATHSIG, SIGTERM); /* a parent killed outright takes its workers along */
    if (getppid() != parent)                /* it died before prctl took effect */
        exit(0);
    struct loop *l = new_loop(lfd, nofile_setsize(), exclusive);
    loops = &l;
    run_loop(l);
    if (counts_file != NULL) { /* one write of one line, appended: the workers' lines do not mix */
        char line[160];
        int n = snprintf(line, sizeof line, "WORKER %d pid=%d accepted=%ld wakeups=%ld empty=%ld\n", i,
                         (int)getpid(), l->accepted, l->wakeups, l->empty);
        int fd = open(counts_file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, line, (size_t)n) != n)
            fprintf(stderr, "error: %s: %s\n", counts_file, strerror(errno));
        if (fd >= 0)
            close(fd);
    }
    for (struct live *n; (n = live_first(&l->live)) != NULL;)
        close_conn(l, live_owner(n, struct conn, link));
    exit(0);
}

int main(int argc, char **argv)
{
    enum share share = parse_share(argv[0], take_flag(&argc, argv, "--share"));
    counts_file = take_flag(&argc, argv, "--worker-counts");
    parse_options(argc, argv, &opts, " [--pool WORKERS] [--share reuseport|exclusive|herd] [--worker-counts FILE]");
    cpu_set_t allowed;
    int cpus = sched_getaffinity(0, sizeof allowed, &allowed) == 0 ? CPU_COUNT(&allowed) : 1;
    int workers = opts.pool > 0 ? opts.pool : cpus;
    install_signals();
    (void)setpgid(0, 0); /* as c-prefork: a SIGTERM to this process alone reaches the workers */
    int *lfds = calloc((size_t)workers, sizeof *lfds);
    if (lfds == NULL)
        die("calloc");
    for (int i = 0; i < workers; i++) { /* reuseport: a socket each, on the port the first got */
        lfds[i] = i == 0 || share == SHARE_REUSEPORT ? listen_socket(&opts, share == SHARE_REUSEPORT, 1) : lfds[0];
        if (i == 0 && opts.port == 0)
            opts.port = bound_port(lfds[0]);
    }
    // BEGIN workers
    pid_t parent = getpid();
    for (int i = 0; i < workers; i++) {
        pid_t pid = fork();
        if (pid < 0)
            die("fork");
        if (pid == 0) {
            int own = lfds[i];
            for (int k = 0; k < workers; k++) /* keep only its own listening socket */
                if (lfds[k] != own && (k == 0 || lfds[k] != lfds[0]))
                    close(lfds[k]);
            free(lfds);
            worker(i, own, share == SHARE_EXCLUSIVE, parent);
        }
    }
    // END workers
    announce_ready(lfds[0]);
    /* The parent holds no listening socket: a worker that dies takes its own out of the port's group. */
    for (int i = 0; i < workers; i++)
        if (i == 0 || lfds[i] != lfds[0])
            close(lfds[i]);
    free(lfds);
    return wait_for_workers();
}
#else

#ifdef WITH_DB
/* The loop's connections to the database closed and its clients gone: what exit() would leave (ASan counts it). */
static void free_loop_db(struct loop *l)
{
    for (struct live *n; (n = live_first(&l->zombies)) != NULL;) {
        live_remove(n);
        free(live_owner(n, struct conn, link));
    }
    for (int i = 0; i < l->npipes; i++) {
        PQfinish(l->pipes[i].db.conn);
        free(l->pipes[i].fifo);
    }
    free(l->pipes);
}
#endif

int main(int argc, char **argv)
{
#ifdef WITH_DB
    const char *conns = take_flag(&argc, argv, "--db-conns");
    if (conns != NULL && ((db_conns = atoi(conns)) < 1 || db_conns > 256)) {
        fprintf(stderr, "%s: --db-conns wants a number from 1 to 256; got '%s'\n", argv[0], conns);
        return EXIT_SETUP;
    }
    parse_options(argc, argv, &opts, " --db DSN [--db-conns N] [--pool THREADS]\n"
                  "  --db DSN: the database, as libpq's connection string (required)\n"
                  "  --db-conns N: each loop's connections to it, in pipeline mode (default 2)\n");
    if (opts.db == NULL) {
        fprintf(stderr, "%s: --db DSN is required (the database it queries)\n", argv[0]);
        return EXIT_SETUP;
    }
#else
    parse_options(argc, argv, &opts, " [--pool THREADS]");
#endif
    long cores = DEFAULT_LOOPS > 0 ? 0 : sysconf(_SC_NPROCESSORS_ONLN); /* asked only if needed */
    int threads = opts.pool > 0 ? opts.pool : DEFAULT_LOOPS > 0 ? DEFAULT_LOOPS : (int)(cores > 0 ? cores : 1);
    install_signals();
    int setsize = nofile_setsize();

    /* Loop 0 runs on the main thread, which alone takes SIGTERM; the others block it. */
    loops = calloc((size_t)threads, sizeof *loops);
    if (loops == NULL)
        die("calloc");
    for (int i = 0; i < threads; i++) {
        loops[i] = new_loop(listen_socket(&opts, threads > 1, 1), setsize, 0);
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
#ifdef WITH_DB
    free_loop_db(loops[0]);
#endif
    return 0; /* exit() ends the other loops, and closes their connections */
}
#endif
