/*
 * c-threadpool: a fixed pool of threads fed by a bounded queue of connections.
 *
 * The main thread accepts and puts each connection in a queue; --pool worker threads
 * (default 64) take connections from it and serve each to its end. When the queue is
 * full, the acceptor waits, and new clients wait in the kernel's listen queue: the pool
 * bounds the threads, and the queue bounds the memory. This is the C twin of Java's
 * ThreadPoolExecutor server, the source write-up 000's "pseudo-async" IO.
 *
 * Build: make -C code/c build/c-threadpool     Run: code/c/build/c-threadpool --pool 64
 * Chapter: book/c/blocking.md
 */
#define _GNU_SOURCE
#include "../common/server.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#define DEFAULT_POOL 64
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

static void *worker(void *arg)
{
    (void)arg;
    for (;;)
        serve_connection(queue_take(), &opts);
    return NULL;
}

int main(int argc, char **argv)
{
    parse_options(argc, argv, &opts, NULL);
    int pool = opts.pool > 0 ? opts.pool : DEFAULT_POOL;
    install_signals();
    int lfd = listen_socket(&opts, 0, 0);

    /* Workers must not take SIGTERM: only the acceptor should see EINTR and stop. */
    sigset_t old;
    block_stop_signals(&old);
    for (int i = 0; i < pool; i++)
        start_thread(worker, NULL);
    restore_signal_mask(&old);
    announce_ready(lfd);

    // BEGIN accept-loop
    for (int fd; (fd = accept_client(lfd)) >= 0;)
        queue_put(fd);
    // END accept-loop
    close(lfd);
    return 0;
}
