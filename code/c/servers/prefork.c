/*
 * c-prefork: a fixed pool of processes, each blocking in accept() on the shared socket.
 *
 * Forking happens once, at start; the kernel hands each new connection to one of the
 * workers waiting in accept(). A worker serves one connection at a time, so --pool
 * bounds the connections served at once (default 64, like c-threadpool).
 *
 * Build: make -C code/c build/c-prefork     Run: code/c/build/c-prefork --port 8080 --pool 64
 * Chapter: book/c/blocking.md
 */
#define _GNU_SOURCE
#include "../common/server.h"

#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#define DEFAULT_POOL 64

static _Noreturn void worker(int lfd, const struct options *opts)
{
    for (int fd; (fd = accept_client(lfd)) >= 0;)
        serve_connection(fd, opts);
    _exit(0);
}

int main(int argc, char **argv)
{
    struct options opts;
    parse_options(argc, argv, &opts, NULL);
    int pool = opts.pool > 0 ? opts.pool : DEFAULT_POOL;
    install_signals();
    /* Our own process group, so that a SIGTERM sent to this process alone (kill PID from
     * a shell) can be passed on to the workers. Under the harness we lead a session
     * already, and this fails harmlessly. */
    (void)setpgid(0, 0);
    int lfd = listen_socket(&opts, 0, 0);

    // BEGIN prefork
    for (int i = 0; i < pool; i++) {
        pid_t pid = fork();
        if (pid < 0)
            die("fork");
        if (pid == 0)
            worker(lfd, &opts);
    }
    // END prefork
    announce_ready(lfd);
    close(lfd); /* the parent only waits: for SIGTERM (which the whole group receives) or a dead worker */
    return wait_for_workers();
}
