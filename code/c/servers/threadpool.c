/*
 * c-threadpool: a fixed pool of threads fed by a bounded queue of connections.
 *
 * The main thread accepts and puts each connection in a queue; --pool worker threads
 * (default 64) take connections from it and serve each to its end. When the queue is
 * full, the acceptor waits, and new clients wait in the kernel's listen queue: the pool
 * bounds the threads, and the queue bounds the memory. This is the C twin of Java's
 * ThreadPoolExecutor server, the source write-up 000's "pseudo-async" IO.
 *
 * Built with -DWITH_DB it is c-db-threadpool, whose wait is a real database (PostgreSQL, through
 * libpq): each worker holds one connection to it, opened at start, and blocks in it while a query
 * runs, so the workers are the connection pool (--pool, default 16 there) and a request waits for a
 * free worker, never for a database connection apart. Its routes are db.h's: TechEmpower's /db and
 * /queries?queries=N, the book's body on any other target (the contract battery runs as on every
 * server); --db DSN names the database.
 *
 * Build: make -C code/c build/c-threadpool     Run: code/c/build/c-threadpool --pool 64
 *        make -C code/c build/c-db-threadpool  Run: code/c/build/c-db-threadpool --db "host=... dbname=bench"
 *        (iobench serve c-db-threadpool starts a throwaway PostgreSQL first and passes its --db)
 * Chapter: book/c/blocking.md (c-db-threadpool: book/synthesis/database.md)
 */
#define _GNU_SOURCE
#include "../common/server.h"
#ifdef WITH_DB
#include "../common/db.h"
#endif

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#ifdef WITH_DB
#define DEFAULT_POOL 16
#else
#define DEFAULT_POOL 64
#endif
#define QUEUE_CAPACITY 1024

// BEGIN queue
struct queue {
    int fds[QUEUE_CAPACITY];
    size_t head, count;
    pthread_mutex_t lock;
    pthread_cond_t not_empty, not_full;
};

static struct queue q = {.lock = PTHREAD_MUTEX_INITIALIZER,
                         .not_empty = PTHREAD_COND_INITIALIZER,
                         .not_full = PTHREAD_COND_INITIALIZER};

static void queue_put(int fd)
{
    pthread_mutex_lock(&q.lock);
    while (q.count == QUEUE_CAPACITY)
        pthread_cond_wait(&q.not_full, &q.lock);
    q.fds[(q.head + q.count++) % QUEUE_CAPACITY] = fd;
    pthread_cond_signal(&q.not_empty);
    pthread_mutex_unlock(&q.lock);
}

static int queue_take(void)
{
    pthread_mutex_lock(&q.lock);
    while (q.count == 0)
        pthread_cond_wait(&q.not_empty, &q.lock);
    int fd = q.fds[q.head];
    q.head = (q.head + 1) % QUEUE_CAPACITY;
    q.count--;
    pthread_cond_signal(&q.not_full);
    pthread_mutex_unlock(&q.lock);
    return fd;
}
// END queue

static struct options opts;

#ifdef WITH_DB
static __thread struct db worker_db; /* this worker's connection to the database */

static size_t answer(const char *target, size_t target_len, int keep_alive, char *out, size_t cap, int *close)
{
    int n;
    enum db_route r = db_route(target, target_len, &n);
    return db_answer(&worker_db, r, n, keep_alive, out, cap, close);
}

/* How many workers have tried their first connection: the server says READY once all have, so the pool is open
 * before the first request (a database that is down is said, and the server starts anyway: it answers 503). */
static int opened;
static pthread_mutex_t opened_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t all_opened = PTHREAD_COND_INITIALIZER;

static void *worker(void *arg)
{
    worker_db = (struct db){.dsn = opts.db, .seed = (unsigned)(uintptr_t)arg * 2654435761u};
    (void)db_connect(&worker_db); /* within DB_TIMEOUT_MS */
    pthread_mutex_lock(&opened_lock);
    opened++;
    pthread_cond_signal(&all_opened);
    pthread_mutex_unlock(&opened_lock);
    for (;;)
        serve_connection_answered(queue_take(), &opts, answer);
    return NULL;
}
#define USAGE " --db DSN\n  --db DSN: the database, as libpq's connection string (required)\n"
#else
static void *worker(void *arg)
{
    (void)arg;
    for (;;)
        serve_connection(queue_take(), &opts);
    return NULL;
}
#define USAGE NULL
#endif

int main(int argc, char **argv)
{
    parse_options(argc, argv, &opts, USAGE);
#ifdef WITH_DB
    if (opts.db == NULL) {
        fprintf(stderr, "%s: --db DSN is required (the database it queries)\n", argv[0]);
        return EXIT_SETUP;
    }
#endif

    int pool = opts.pool > 0 ? opts.pool : DEFAULT_POOL;
    install_signals();
    int lfd = listen_socket(&opts, 0, 0);

    /* Workers must not take SIGTERM: only the acceptor should see EINTR and stop. */
    sigset_t old;
    block_stop_signals(&old);
    for (int i = 0; i < pool; i++)
        start_thread(worker, (void *)(uintptr_t)(i + 1));
    restore_signal_mask(&old);
#ifdef WITH_DB
    pthread_mutex_lock(&opened_lock);
    while (opened < pool)
        pthread_cond_wait(&all_opened, &opened_lock);
    pthread_mutex_unlock(&opened_lock);
#endif
    announce_ready(lfd);

    // BEGIN accept-loop
    for (int fd; (fd = accept_client(lfd)) >= 0;)
        queue_put(fd);
    // END accept-loop
    close(lfd);
    return 0;
}
