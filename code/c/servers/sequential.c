/*
 * c-sequential: one connection at a time (Stevens' blocking IO, no concurrency).
 *
 * The process blocks in accept(), then in read() and write() for that one client until
 * it is done; every other client waits in the kernel's listen queue meanwhile.
 * A client that sends nothing is dropped after 2 s of silence (SO_RCVTIMEO, set in
 * common/server.c; --idle-timeout-s changes it), or it would stop the server.
 *
 * Build: make -C code/c build/c-sequential     Run: code/c/build/c-sequential --port 8080
 * Try:   curl -s http://127.0.0.1:8080/        Chapter: book/c/blocking.md
 */
#define _GNU_SOURCE
#include "../common/server.h"

#include <unistd.h>

int main(int argc, char **argv)
{
    struct options opts;
    parse_options(argc, argv, &opts, NULL);
    install_signals();
    int lfd = listen_socket(&opts, 0, 0);
    announce_ready(lfd);

    // BEGIN accept-loop
    for (int fd; (fd = accept_client(lfd)) >= 0;)
        serve_connection(fd, &opts); /* everyone else waits until this returns */
    // END accept-loop
    close(lfd);
    return 0;
}
