/*
 * c-thread: a new thread for every connection (pthreads).
 *
 * The main thread blocks in accept() and starts a detached thread per connection; the
 * thread blocks in read() and write() for its client. Threads are cheaper than
 * processes but each still has a kernel task and a stack (64 KiB here, set explicitly).
 *
 * Build: make -C code/c build/c-thread     Run: code/c/build/c-thread --port 8080
 * Chapter: book/c/blocking.md
 */
#define _GNU_SOURCE
#include "../common/server.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define STACK_SIZE (64 * 1024)

static struct options opts;

static void *connection_thread(void *arg)
{
    serve_connection((int)(intptr_t)arg, &opts);
    return NULL;
}

int main(int argc, char **argv)
{
    parse_options(argc, argv, &opts, NULL);
    install_signals();
    int lfd = listen_socket(&opts, 0, 0);

    pthread_attr_t attr;
    int err = pthread_attr_init(&attr);
    if (!err)
        err = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (!err)
        err = pthread_attr_setstacksize(&attr, STACK_SIZE);
    if (err) {
        errno = err;
        die("pthread_attr");
    }
    /* SIGTERM must reach the acceptor, so that accept() returns EINTR and the server
     * stops: each connection thread is created with the stop signals blocked. */
    announce_ready(lfd);

    // BEGIN accept-loop
    for (int fd; (fd = accept_client(lfd)) >= 0;) {
        pthread_t tid;
        sigset_t normal;
        block_stop_signals(&normal); /* the new thread inherits the block: stops reach only us */
        err = pthread_create(&tid, &attr, connection_thread, (void *)(intptr_t)fd);
        restore_signal_mask(&normal);
        if (err) { /* out of threads: drop this client, keep serving the others */
            fprintf(stderr, "warning: pthread_create: %s\n", strerror(err));
            close(fd);
        }
    }
    // END accept-loop
    pthread_attr_destroy(&attr);
    close(lfd);
    return 0; /* exit() ends the connection threads too */
}
