/*
 * c-fork: a new process for every connection (the classic inetd / Apache 1 model).
 *
 * The parent blocks in accept() and forks; the child serves the connection and exits.
 * Children are reaped in the accept loop (not ignored), so their CPU time is added to
 * the parent's and the harness sees the whole cost of forking.
 *
 * Build: make -C code/c build/c-fork     Run: code/c/build/c-fork --port 8080
 * Chapter: book/c/blocking.md
 */
#define _GNU_SOURCE
#include "../common/server.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static void reap_children(void)
{
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
}

int main(int argc, char **argv)
{
    struct options opts;
    parse_options(argc, argv, &opts, NULL);
    install_signals();
    (void)setpgid(0, 0); /* our own group: SIGTERM can be passed on to the children */
    int lfd = listen_socket(&opts, 0, 0);
    announce_ready(lfd);

    // BEGIN accept-loop
    for (int fd; (fd = accept_client(lfd)) >= 0;) {
        reap_children();
        pid_t pid = fork();
        if (pid == 0) { /* child: serve this one client, then exit */
            close(lfd);
            serve_connection(fd, &opts);
            _exit(0);
        }
        if (pid < 0)
            die("fork");
        close(fd); /* parent: the child owns the connection now */
    }
    // END accept-loop
    close(lfd);
    signal(SIGTERM, SIG_IGN);
    kill(0, SIGTERM); /* children still serving a client stop too */
    while (wait(NULL) > 0 || errno == EINTR)
        ;
    return 0;
}
