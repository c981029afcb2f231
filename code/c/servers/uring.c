/*
 * c-uring: a proactor on io_uring (liburing): the kernel does the IO, we handle completions.
 *
 * Instead of asking "which socket is ready?" and then calling read(), the server queues
 * the operations themselves (accept, recv, send, a timeout for simulated work) in a
 * submission ring and reaps their results from a completion ring; one
 * io_uring_submit_and_wait() both submits and waits. Exits 77 where the kernel has no
 * io_uring (or forbids it), as a skip rather than a failure.
 *
 * Build: make -C code/c build/c-uring     Run: code/c/build/c-uring --port 8080
 * Chapter: book/c/event-loops.md ("io_uring: hand the kernel the IO itself")
 */
#define _GNU_SOURCE
#include "../common/http.h"
#include "../common/server.h"

#include <errno.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define RING_ENTRIES 4096
#define OUT_SIZE 4096

enum op { OP_ACCEPT, OP_RECV, OP_SEND, OP_WORK };

struct conn {
    int fd;
    enum op op;          /* the one operation in flight for this connection */
    size_t in_len;
    size_t out_len, out_off;
    int close_after;
    int keep_alive;      /* of the request that is working */
    struct __kernel_timespec work;
    struct conn *prev, *next; /* every open connection, so shutdown can free them */
    char in[HTTP_MAX_REQUEST];
    char out[OUT_SIZE];  /* responses being sent: every complete request's, one send */
};

static struct io_uring ring;
static struct options opts;
static struct conn acceptor = {.op = OP_ACCEPT};
static struct conn *open_conns;

static struct io_uring_sqe *get_sqe(void)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
    if (sqe == NULL) { /* ring full: submit what is queued to make room */
        if (io_uring_submit(&ring) < 0)
            die("io_uring_submit");
        sqe = io_uring_get_sqe(&ring);
        if (sqe == NULL)
            die("io_uring_get_sqe");
    }
    return sqe;
}

static void queue_accept(int lfd)
{
    struct io_uring_sqe *sqe = get_sqe();
    io_uring_prep_accept(sqe, lfd, NULL, NULL, SOCK_CLOEXEC);
    io_uring_sqe_set_data(sqe, &acceptor);
}

static void queue_recv(struct conn *c)
{
    struct io_uring_sqe *sqe = get_sqe();
    c->op = OP_RECV;
    io_uring_prep_recv(sqe, c->fd, c->in + c->in_len, sizeof c->in - c->in_len, 0);
    io_uring_sqe_set_data(sqe, c);
}

static void queue_send(struct conn *c)
{
    struct io_uring_sqe *sqe = get_sqe();
    c->op = OP_SEND;
    io_uring_prep_send(sqe, c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
    io_uring_sqe_set_data(sqe, c);
}

static void finish(struct conn *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        open_conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    close(c->fd);
    free(c);
}

static void append(struct conn *c, const char *bytes, size_t n)
{
    memcpy(c->out + c->out_len, bytes, n);
    c->out_len += n;
}

/* Answer the complete requests in the input (as many as fit, with one send), or queue
 * what the next one needs: its work, or more input. */
static void next_step(struct conn *c)
{
    struct http_request req;
    enum http_status st;
    c->out_len = c->out_off = 0;
    while (!c->close_after && c->out_len + 256 <= OUT_SIZE &&
           (st = http_parse(c->in, c->in_len, &req)) != HTTP_INCOMPLETE) {
        size_t n;
        if (st != HTTP_OK) {
            const char *resp = http_error_response(st, &n);
            append(c, resp, n);
            c->close_after = 1;
            break;
        }
        c->in_len -= req.length;
        memmove(c->in, c->in + req.length, c->in_len);
        if (opts.work_ms > 0) { /* a timeout completion stands for the work */
            struct io_uring_sqe *sqe = get_sqe();
            c->op = OP_WORK;
            c->keep_alive = req.keep_alive;
            c->work.tv_sec = (long long)(opts.work_ms / 1000);
            c->work.tv_nsec = (long long)((opts.work_ms - 1000.0 * (double)c->work.tv_sec) * 1e6);
            io_uring_prep_timeout(sqe, &c->work, 0, 0);
            io_uring_sqe_set_data(sqe, c);
            return;
        }
        work_spin_us(opts.spin_us); /* CPU work runs on the loop */
        const char *resp = http_response(req.keep_alive, &n);
        append(c, resp, n);
        c->close_after = !req.keep_alive;
    }
    if (c->out_len > 0)
        queue_send(c);
    else
        queue_recv(c);
}

// BEGIN completion
static void on_completion(int lfd, struct conn *c, int res)
{
    switch (c->op) {
    case OP_ACCEPT:
        queue_accept(lfd); /* keep one accept in flight */
        if (res < 0) {
            if (res != -EINTR && res != -ECONNABORTED && res != -EMFILE && res != -ENFILE) {
                errno = -res;
                die("accept (io_uring)");
            }
            return;
        }
        struct conn *n = calloc(1, sizeof *n);
        if (n == NULL) {
            close(res);
            return;
        }
        set_nodelay(res);
        n->fd = res;
        n->next = open_conns;
        if (open_conns)
            open_conns->prev = n;
        open_conns = n;
        queue_recv(n);
        return;
    case OP_RECV:
        if (res <= 0) { /* peer closed, reset, or error */
            finish(c);
            return;
        }
        c->in_len += (size_t)res;
        next_step(c);
        return;
    case OP_WORK: { /* res is -ETIME: the timeout fired, the work is done */
        size_t n;
        const char *resp = http_response(c->keep_alive, &n);
        append(c, resp, n);
        c->close_after = !c->keep_alive;
        queue_send(c);
        return;
    }
    case OP_SEND:
        if (res < 0) {
            finish(c);
            return;
        }
        c->out_off += (size_t)res;
        if (c->out_off < c->out_len)
            queue_send(c); /* a short send: the rest */
        else if (c->close_after)
            finish(c);
        else
            next_step(c); /* a pipelined request may be waiting already */
        return;
    }
}
// END completion

int main(int argc, char **argv)
{
    parse_options(argc, argv, &opts, NULL);
    install_signals();
    int ret = io_uring_queue_init(RING_ENTRIES, &ring, 0);
    if (ret < 0) {
        fprintf(stderr, "io_uring_queue_init: %s: io_uring is not available here\n", strerror(-ret));
        return (ret == -ENOSYS || ret == -EPERM || ret == -EOPNOTSUPP) ? EXIT_UNSUPPORTED : EXIT_SETUP;
    }
    struct io_uring_probe *probe = io_uring_get_probe_ring(&ring);
    if (probe == NULL || !io_uring_opcode_supported(probe, IORING_OP_ACCEPT) ||
        !io_uring_opcode_supported(probe, IORING_OP_RECV) || !io_uring_opcode_supported(probe, IORING_OP_SEND)) {
        fprintf(stderr, "io_uring here lacks accept, recv or send\n");
        return EXIT_UNSUPPORTED;
    }
    io_uring_free_probe(probe);
    int lfd = listen_socket(&opts, 0, 0);
    queue_accept(lfd);
    announce_ready(lfd);

    // BEGIN loop
    while (!stop_requested) {
        ret = io_uring_submit_and_wait(&ring, 1);
        if (ret < 0) {
            if (ret == -EINTR)
                continue;
            errno = -ret;
            die("io_uring_submit_and_wait");
        }
        struct io_uring_cqe *cqe;
        unsigned head, seen = 0;
        io_uring_for_each_cqe(&ring, head, cqe) {
            on_completion(lfd, io_uring_cqe_get_data(cqe), cqe->res);
            seen++;
        }
        io_uring_cq_advance(&ring, seen);
    }
    // END loop
    io_uring_queue_exit(&ring); /* cancels what is in flight; only then free its buffers */
    while (open_conns)
        finish(open_conns);
    close(lfd);
    return 0;
}
