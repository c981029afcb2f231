/*
 * server.h: what every C server of the book shares besides HTTP.
 *
 * - The server contract's options: --port N (0 = any), --host A, --work-ms N (sleep per
 *   request), --spin-us N (busy CPU per request), --pool N, --backlog N, --idle-timeout-s S
 *   (the blocking servers drop a connection silent S seconds, 2 by default, 0 = never;
 *   the event loops keep idle connections and ignore it).
 * - Listening: a socket bound to 127.0.0.1 by default, then exactly "READY port=N".
 * - Stopping: SIGTERM sets a flag (or, where a model cannot poll a flag, ends the
 *   process) and the server exits 0; a setup error exits 1 naming the failing call;
 *   a model this machine cannot run exits 77.
 * - The simulated work of a request: a sleep and a spin, apart.
 * - Blocking IO helpers: write everything, and serve one connection to its end (the same
 *   loop serves c-coroutine's connections, over reads and writes that park a coroutine).
 */
#ifndef IOM_SERVER_H
#define IOM_SERVER_H

#include <signal.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#define EXIT_SETUP 1
#define EXIT_UNSUPPORTED 77

struct options {
    const char *host;
    int port;
    double work_ms;
    double spin_us;
    int pool;     /* 0: the model's default */
    int backlog;
    double idle_timeout_s; /* blocking servers: drop a connection silent this long; 0 = never */
    const char *db;        /* --db DSN: the database's libpq connection string (only servers whose usage names it) */
};

extern volatile sig_atomic_t stop_requested;

/* Parse the contract's flags; print usage and exit 1 on a bad one. */
void parse_options(int argc, char **argv, struct options *opts, const char *usage_extra);

/* Exit 1 after "error: <call>: <strerror(errno)>" on stderr. */
_Noreturn void die(const char *call);

/* SIGTERM/SIGINT set stop_requested (no SA_RESTART: blocking calls return EINTR).
 * SIGPIPE is ignored: a peer that went away is an EPIPE, not a crash. */
void install_signals(void);

/* socket, SO_REUSEADDR, bind, listen; optional SO_REUSEPORT and O_NONBLOCK. Dies on error. */
int listen_socket(const struct options *opts, int reuseport, int nonblocking);

/* The port a socket is bound to. */
int bound_port(int fd);

/* Print "READY port=N" for the bound socket and flush. */
void announce_ready(int listen_fd);

/* Blocking servers: wait for the next client on listen_fd and return its descriptor
 * (close-on-exec), or -1 once a stop was requested (SIGTERM, SIGINT). A client that gave
 * up before it was accepted is skipped; any other failure is fatal. */
int accept_client(int listen_fd);

/* Block the stop signals (SIGTERM, SIGINT, and the SIGALRM that repeats them) in this
 * thread, saving its mask in old; threads created meanwhile inherit the block, so that
 * only the thread that restores the mask is interrupted when a stop is requested. */
void block_stop_signals(sigset_t *old);
/* Put back the mask block_stop_signals saved. */
void restore_signal_mask(const sigset_t *old);

/* A parent of worker processes, in its own process group (c-prefork, c-epoll-workers): once a stop
 * is requested, or a worker ends before one was, send SIGTERM to the group (ignoring it itself) and
 * wait until every worker has ended. Returns 0, or EXIT_SETUP after naming on stderr a worker that
 * ended on its own. */
int wait_for_workers(void);

/* Start a detached thread running fn(arg); exit 1 naming the call that failed. */
void start_thread(void *(*fn)(void *), void *arg);

/* ms milliseconds as a struct timespec. */
struct timespec timespec_ms(double ms);

/* The simulated work of one request is a wait of --work-ms, then --spin-us of CPU. A thread
 * that may block does both in turn; an event loop must not sleep, so it waits its own way
 * (a timer, an io_uring timeout) and calls only work_spin_us. */
/* Sleep ms milliseconds (a stop request cuts it short). */
void work_sleep_ms(double ms);
/* Keep the CPU busy for us microseconds. */
void work_spin_us(double us);

/* write() until all n bytes are out; -1 on error (errno set). */
ssize_t write_all(int fd, const void *buf, size_t n);

/* TCP_NODELAY on an accepted socket. Without it, a server that writes two small responses
 * back to back (pipelined requests) has the second held by Nagle's algorithm until the
 * first is ACKed, and the client delays that ACK by up to 40 ms. nginx sets it on
 * keep-alive connections. */
void set_nodelay(int fd);

#ifndef SERVE_OUT_SIZE
#define SERVE_OUT_SIZE 4096 /* responses batched per write (c-db-epoll: more, for its JSON answers) */
#endif

/* Blocking servers: read, parse and answer requests on fd until the peer closes, asks to
 * close, sends something malformed, stays silent idle_timeout_s, or stop is requested.
 * The responses to every complete request read are sent with one write (after each
 * request's work, when there is work). Sets TCP_NODELAY. Closes fd. */
void serve_connection(int fd, const struct options *opts);

/* A server whose answers are computed (the database servers, db.h) instead of the book's fixed one after the
 * simulated work: the whole response to one request (its target, keep_alive) written at out, at most cap
 * (ANSWER_MAX) bytes; returns its length (0: none could be made), and sets *close when the connection must
 * close after it. */
typedef size_t (*answer_fn)(const char *target, size_t target_len, int keep_alive, char *out, size_t cap,
                            int *close);
#define ANSWER_MAX 20480

/* How a connection loop that looks blocking reads, writes and waits: with the blocking
 * calls themselves (serve_connection), or with calls that park a coroutine (c-coroutine). */
struct stream_ops {
    ssize_t (*read)(int fd, void *buf, size_t n);            /* as read(2) */
    ssize_t (*write_all)(int fd, const void *buf, size_t n); /* as write_all */
    void (*sleep_ms)(double ms);                             /* the work's wait */
    answer_fn answer;                                        /* NULL: the book's response */
};

/* serve_connection for a server whose answers are computed: each request answered by answer, in turn. */
void serve_connection_answered(int fd, const struct options *opts, answer_fn answer);

/* serve_connection's loop, over io: answers requests on fd until the peer closes, asks to
 * close, sends something malformed, or a read or write fails. Leaves fd open. */
void serve_requests(int fd, const struct options *opts, const struct stream_ops *io);

#endif
