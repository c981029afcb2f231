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
 * The chain. c-uring-multishot changes several things at once; this file, built with
 * -DURING_STEP=N, adds them one at a time (each step keeps the ones before it), so that a
 * run can say which of them counts (data/io-uring-chain, book/c/event-loops.md):
 *   0  c-uring            one accept, recv and send SQE per operation, file descriptors
 *   1  c-uring-taskrun    + IORING_SETUP_SINGLE_ISSUER | DEFER_TASKRUN (or COOP_TASKRUN):
 *                           completions' task work runs when the loop waits, not as an interrupt
 *   2  c-uring-ringfd     + a registered ring descriptor: io_uring_enter() skips its lookup
 *   3  c-uring-maccept    + multishot accept: one SQE accepts every connection
 *   4  c-uring-direct     + direct descriptors: accepted into io_uring's registered file table,
 *                           recv and send name a slot (IOSQE_FIXED_FILE), closed by the ring;
 *                           TCP_NODELAY set once on the listening socket, which Linux copies
 *                           into every accepted socket (there is no descriptor to set it on)
 *   c-uring-multishot then adds multishot receive into a provided-buffer ring, with a
 *   connection's buffers only while it has requests (servers/uring_multishot.c).
 *
 * Build: make -C code/c build/c-uring     Run: code/c/build/c-uring --port 8080
 * Chapter: book/c/event-loops.md ("io_uring: hand the kernel the IO itself")
 */
#define _GNU_SOURCE
#include "../common/conn.h"
#include "../common/ring.h"
#include "../common/server.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef URING_STEP
#define URING_STEP 0
#endif
#define TASKRUN (URING_STEP >= 1)
#define RING_FD (URING_STEP >= 2)
#define MULTI_ACCEPT (URING_STEP >= 3)
#define DIRECT (URING_STEP >= 4)

#define RING_ENTRIES 4096

enum op { OP_ACCEPT, OP_RECV, OP_SEND, OP_WORK, OP_IGNORE };

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
#if DIRECT
static struct conn ignored = {.op = OP_IGNORE}; /* an operation whose completion needs nothing: a close */
#endif
static struct live open_conns;
static int listen_fd;
static int accepting; /* an accept is armed (steps 3 and 4: a full table pauses it) */

static void queue_accept(void)
{
    struct io_uring_sqe *sqe = ring_sqe(&ring);
#if DIRECT
    io_uring_prep_multishot_accept_direct(sqe, listen_fd, NULL, NULL, 0);
#elif MULTI_ACCEPT
    io_uring_prep_multishot_accept(sqe, listen_fd, NULL, NULL, SOCK_CLOEXEC);
#else
    io_uring_prep_accept(sqe, listen_fd, NULL, NULL, SOCK_CLOEXEC);
#endif
    io_uring_sqe_set_data(sqe, &acceptor);
    accepting = 1;
}

/* The connection's socket as an operation names it: a slot of the registered table (step 4),
 * else its descriptor. */
static void name_socket(struct io_uring_sqe *sqe)
{
    (void)sqe;
#if DIRECT
    sqe->flags |= IOSQE_FIXED_FILE;
#endif
}

static void queue_recv(struct conn *c)
{
    struct io_uring_sqe *sqe = ring_sqe(&ring);
    c->op = OP_RECV;
    io_uring_prep_recv(sqe, c->fd, c->b.in + c->b.in_len, sizeof c->b.in - c->b.in_len, 0);
    name_socket(sqe);
    io_uring_sqe_set_data(sqe, c);
}

static void queue_send(struct conn *c)
{
    struct io_uring_sqe *sqe = ring_sqe(&ring);
    c->op = OP_SEND;
    io_uring_prep_send(sqe, c->fd, c->b.out + c->b.out_off, c->b.out_len - c->b.out_off, MSG_NOSIGNAL);
    name_socket(sqe);
    io_uring_sqe_set_data(sqe, c);
}

/* Close the connection (nothing of it is in flight) and free it; a paused accept resumes. */
static void finish(struct conn *c)
{
    live_remove(&c->link);
#if DIRECT
    struct io_uring_sqe *sqe = ring_sqe(&ring); /* the slot is the ring's to close */
    io_uring_prep_close_direct(sqe, (unsigned)c->fd);
    io_uring_sqe_set_data(sqe, &ignored);
#else
    close(c->fd);
#endif
    free(c);
    if (!accepting && !stop_requested)
        queue_accept();
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
    case OP_IGNORE:
        return;
    case OP_ACCEPT:
#if MULTI_ACCEPT
        if (!(cqe->flags & IORING_CQE_F_MORE)) /* the multishot accept ended: arm it again, */
            accepting = 0;
        if (!accepting && res != -EMFILE && res != -ENFILE) /* unless the table is full (finish resumes it) */
            queue_accept();
#else
        queue_accept(); /* keep one accept in flight */
#endif
        if (res < 0) {
            if (res != -EINTR && res != -ECONNABORTED && res != -EMFILE && res != -ENFILE) {
                errno = -res;
                die("accept (io_uring)");
            }
            return;
        }
        struct conn *n = calloc(1, sizeof *n);
        if (n == NULL) {
#if DIRECT
            struct io_uring_sqe *sqe = ring_sqe(&ring);
            io_uring_prep_close_direct(sqe, (unsigned)res);
            io_uring_sqe_set_data(sqe, &ignored);
#else
            close(res);
#endif
            return;
        }
#if !DIRECT
        set_nodelay(res);
#endif
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

/* The ring, with what this step adds to c-uring's. */
static void setup_ring(void)
{
#if TASKRUN
    ring_init(&ring, RING_ENTRIES, 0, ring_taskrun_tries);
#else
    ring_init(&ring, RING_ENTRIES, 0, NULL);
#endif
    static const int needs[] = {IORING_OP_ACCEPT, IORING_OP_RECV, IORING_OP_SEND};
    ring_require(&ring, "io_uring accept, recv and send", needs, sizeof needs / sizeof needs[0]);
#if MULTI_ACCEPT /* multishot accept came in 5.19 with IORING_OP_SOCKET, which the probe can see */
    static const int multi[] = {IORING_OP_SOCKET};
    ring_require(&ring, "io_uring multishot accept", multi, 1);
#endif
#if RING_FD
    (void)io_uring_register_ring_fd(&ring); /* 5.18; without it, each enter looks the ring up */
#endif
#if DIRECT
    ring_register_direct(&ring);
#endif
}

int main(int argc, char **argv)
{
    parse_options(argc, argv, &opts, NULL);
    install_signals();
    setup_ring();
    work_time = ring_timeout_ms(opts.work_ms);
    live_init(&open_conns);
    listen_fd = listen_socket(&opts, 0, 0);
#if DIRECT
    int one = 1; /* inherited by every accepted socket (see the top) */
    if (setsockopt(listen_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
        die("setsockopt(TCP_NODELAY)");
#endif
    queue_accept();
    announce_ready(listen_fd);
    ring_loop(&ring, on_completion);
    io_uring_queue_exit(&ring); /* cancels what is in flight (and closes the slots); only then free its buffers */
    for (struct live *n; (n = live_first(&open_conns)) != NULL;) {
        struct conn *c = live_owner(n, struct conn, link);
        live_remove(n);
#if !DIRECT
        close(c->fd);
#endif
        free(c);
    }
    close(listen_fd);
    return 0;
}
