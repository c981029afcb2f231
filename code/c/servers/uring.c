/*
 * c-uring: a proactor on io_uring (liburing): the kernel does the IO, we handle completions.
 *
 * Instead of asking "which socket is ready?" and then calling read(), the server queues
 * the operations themselves (accept, recv, send, a timeout for simulated work) in a
 * submission ring and reaps their results from a completion ring; one
 * io_uring_submit_and_wait() both submits and waits (the loop, with the ring's setup, is in
 * common/ring.c, shared with c-uring-multishot). Exits 77 where the kernel has no io_uring
 * (or forbids it), as a skip rather than a failure.
 *
 * Build: make -C code/c build/c-uring     Run: code/c/build/c-uring --port 8080
 * Chapter: book/c/event-loops.md ("io_uring: hand the kernel the IO itself")
 */
#define _GNU_SOURCE
#include "../common/conn.h"
#include "../common/ring.h"
#include "../common/server.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#define RING_ENTRIES 4096

enum op { OP_ACCEPT, OP_RECV, OP_SEND, OP_WORK };

struct conn {
    int fd;
    enum op op;        /* the one operation in flight for this connection */
    struct live link;  /* in open_conns, so shutdown can free them */
    struct conn_buf b; /* requests received, and the responses being sent (one send) */
};

static struct io_uring ring;
static struct options opts;
static struct __kernel_timespec work_time; /* --work-ms, the timeout that stands for it */
static struct conn acceptor = {.op = OP_ACCEPT};
static struct live open_conns;
static int listen_fd;

static void queue_accept(void)
{
    struct io_uring_sqe *sqe = ring_sqe(&ring);
    io_uring_prep_accept(sqe, listen_fd, NULL, NULL, SOCK_CLOEXEC);
    io_uring_sqe_set_data(sqe, &acceptor);
}

static void queue_recv(struct conn *c)
{
    struct io_uring_sqe *sqe = ring_sqe(&ring);
    c->op = OP_RECV;
    io_uring_prep_recv(sqe, c->fd, c->b.in + c->b.in_len, sizeof c->b.in - c->b.in_len, 0);
    io_uring_sqe_set_data(sqe, c);
}

static void queue_send(struct conn *c)
{
    struct io_uring_sqe *sqe = ring_sqe(&ring);
    c->op = OP_SEND;
    io_uring_prep_send(sqe, c->fd, c->b.out + c->b.out_off, c->b.out_len - c->b.out_off, MSG_NOSIGNAL);
    io_uring_sqe_set_data(sqe, c);
}

static void finish(struct conn *c)
{
    live_remove(&c->link);
    close(c->fd);
    free(c);
}

static void queue_work(struct conn *c)
{
    struct io_uring_sqe *sqe = ring_sqe(&ring);
    c->op = OP_WORK;
    io_uring_prep_timeout(sqe, &work_time, 0, 0); /* its completion stands for the work */
    io_uring_sqe_set_data(sqe, c);
}

/* Answer the complete requests in the input (as many as fit, with one send), or queue
 * what the next one needs: its work, or more input. */
static void next_step(struct conn *c)
{
    c->b.out_len = c->b.out_off = 0;
    if (conn_take_requests(&c->b, &opts))
        queue_work(c);
    else if (c->b.out_len > 0)
        queue_send(c);
    else
        queue_recv(c);
}

// BEGIN completion
static void on_completion(struct io_uring_cqe *cqe)
{
    struct conn *c = io_uring_cqe_get_data(cqe); /* what the operation was queued with */
    int res = cqe->res;
    switch (c->op) {
    case OP_ACCEPT:
        queue_accept(); /* keep one accept in flight */
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
        live_add(&open_conns, &n->link);
        queue_recv(n);
        return;
    case OP_RECV:
        if (res <= 0) { /* peer closed, reset, or error */
            finish(c);
            return;
        }
        c->b.in_len += (size_t)res;
        next_step(c);
        return;
    case OP_WORK: /* res is -ETIME: the timeout fired, the work is done */
        conn_work_done(&c->b);
        queue_send(c);
        return;
    case OP_SEND:
        if (res < 0) {
            finish(c);
            return;
        }
        c->b.out_off += (size_t)res;
        if (c->b.out_off < c->b.out_len)
            queue_send(c); /* a short send: the rest */
        else if (c->b.close_after)
            finish(c);
        else
            next_step(c); /* a pipelined request may be waiting already */
        return;
    }
}
// END completion

int main(int argc, char **argv)
{
    static const int needs[] = {IORING_OP_ACCEPT, IORING_OP_RECV, IORING_OP_SEND};
    parse_options(argc, argv, &opts, NULL);
    install_signals();
    ring_init(&ring, RING_ENTRIES, 0, NULL);
    ring_require(&ring, "io_uring accept, recv and send", needs, sizeof needs / sizeof needs[0]);
    work_time = ring_timeout_ms(opts.work_ms);
    live_init(&open_conns);
    listen_fd = listen_socket(&opts, 0, 0);
    queue_accept();
    announce_ready(listen_fd);
    ring_loop(&ring, on_completion);
    io_uring_queue_exit(&ring); /* cancels what is in flight; only then free its buffers */
    for (struct live *n; (n = live_first(&open_conns)) != NULL;)
        finish(live_owner(n, struct conn, link));
    close(listen_fd);
    return 0;
}
