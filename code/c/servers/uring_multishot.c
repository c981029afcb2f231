/*
 * c-uring-multishot: io_uring as its authors advise (liburing's examples/proxy.c): the
 * proactor of c-uring (the same loop and setup, common/ring.c), with what each newer
 * kernel added to cut the work per request.
 *
 * - Multishot accept into direct descriptors: one SQE accepts every connection (a CQE
 *   each, flagged IORING_CQE_F_MORE while it stays armed), so no accept SQE is prepared
 *   and submitted per connection. The socket goes into io_uring's registered file table
 *   (sized by RLIMIT_NOFILE), never into the process's descriptor table: no descriptor to
 *   allocate, and later operations name a slot (IOSQE_FIXED_FILE) instead of a descriptor
 *   the kernel must look up, and take a reference to, on each one. Setting TCP_NODELAY
 *   per socket would need a descriptor (or io_uring's setsockopt command, kernel 6.7,
 *   which liburing 2.3 does not wrap): it is set once on the listening socket instead,
 *   and Linux copies it into every socket accepted from it. A full table (ENFILE) pauses
 *   accepting until a connection closes.
 * - Multishot receive into a provided-buffer ring: one recv SQE per connection for its
 *   whole life instead of one per read; the kernel picks a buffer from a ring shared by
 *   all connections only when bytes arrive, so an idle connection holds none. The bytes
 *   are copied into a conn_buf (conn.c's parser) that a connection has only while it has
 *   requests to answer: an idle connection costs its small struct conn, where c-uring and
 *   the epoll loops keep 12 KiB of buffers per connection, busy or not. A buffer goes back
 *   to the ring once copied; an empty ring ends the receive with ENOBUFS, and it is armed
 *   again.
 * - A registered ring descriptor: io_uring_enter() skips looking up the ring's own
 *   descriptor on every call (cheap while one thread owns the descriptor table).
 * - IORING_SETUP_SINGLE_ISSUER | DEFER_TASKRUN (kernel 6.1): the kernel does not interrupt
 *   the loop to finish completions (task work); it runs them in a batch when the loop
 *   waits (io_uring_enter with GETEVENTS, as io_uring_submit_and_wait does). DEFER_TASKRUN
 *   requires SINGLE_ISSUER, the promise that one thread submits. Where they are missing,
 *   COOP_TASKRUN (5.19) still spares the interrupt; then no flag at all.
 * Exits 77 where io_uring, multishot receive (6.0) or buffer rings are missing.
 *
 * Build: make -C code/c build/c-uring-multishot     Run: code/c/build/c-uring-multishot --port 8080
 * Chapter: book/c/event-loops.md ("io_uring: hand the kernel the IO itself")
 */
#define _GNU_SOURCE
#include "../common/conn.h"
#include "../common/ring.h"
#include "../common/server.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define RING_ENTRIES 4096
#define CQ_ENTRIES (4 * RING_ENTRIES) /* multishot requests post many completions each */
#define BUF_COUNT 4096 /* provided buffers, a power of two: one each for 4096 receives in a batch */
#define BUF_SIZE 1024  /* a request of wrk's, or 16 pipelined ones, takes one or two */
#define BUF_GROUP 0
#define HOLD_MAX 16 /* buffers a connection may hold (b->in full) before its receive is paused */
#define SPARE_MAX 1024 /* conn_bufs kept for reuse: a free() and calloc() per request cost more than the IO */

enum kind { K_ACCEPT, K_RECV, K_SEND, K_WORK, K_CLOSE, K_IGNORE }; /* user_data's low 3 bits */

struct conn {
    int slot;               /* its direct descriptor */
    int ops;                /* completions still to come; the armed receive counts once */
    int recv_armed, busy;   /* busy: a send or the work is in flight */
    int peer_done, closing; /* the peer closed (or reset); our close is queued */
    int held_head, held_tail, held_count; /* received buffers not yet copied into b.in */
    size_t held_off;                      /* bytes of the first one already copied */
    struct live link;
    struct conn_buf *b;     /* only while it has requests to answer (NULL when idle) */
};

static struct io_uring ring;
static struct options opts;
static struct __kernel_timespec work_time;
static struct live open_conns;
static struct io_uring_buf_ring *buf_ring;
static char *bufs;
static int held_next[BUF_COUNT];   /* per buffer: the next one its connection holds */
static size_t held_len[BUF_COUNT];    /* per buffer: the bytes received into it */
static int accepting, listen_fd;
static struct conn_buf *spare[SPARE_MAX]; /* idle connections' conn_bufs, ready for the next request */
static int spares;

/* A conn_buf for a connection that has bytes to parse: a spare one if there is, reset (its
 * 12 KiB are overwritten as they are used, never cleared), else a new one; NULL if none. */
static struct conn_buf *take_buf(void)
{
    if (spares == 0)
        return calloc(1, sizeof(struct conn_buf));
    struct conn_buf *b = spare[--spares];
    b->in_len = b->out_len = b->out_off = 0;
    b->close_after = b->keep_alive = 0;
    return b;
}

/* Give back the conn_buf of a connection that went idle (or closed). */
static void give_buf(struct conn_buf *b)
{
    if (b != NULL && spares < SPARE_MAX)
        spare[spares++] = b;
    else
        free(b);
}

/* A submission slot for an operation of kind k on c (or on no connection: NULL), tagged
 * with both; c->ops counts what will complete, K_IGNORE aside. */
static struct io_uring_sqe *get_sqe(struct conn *c, enum kind k)
{
    struct io_uring_sqe *sqe = ring_sqe(&ring);
    io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)c | k);
    if (c != NULL && k != K_IGNORE)
        c->ops++;
    return sqe;
}

static void arm_accept(void)
{
    io_uring_prep_multishot_accept_direct(get_sqe(NULL, K_ACCEPT), listen_fd, NULL, NULL, 0);
    accepting = 1;
}

static void arm_recv(struct conn *c)
{
    struct io_uring_sqe *sqe = get_sqe(c, K_RECV);
    io_uring_prep_recv_multishot(sqe, c->slot, NULL, 0, 0);
    sqe->flags |= IOSQE_FIXED_FILE | IOSQE_BUFFER_SELECT;
    sqe->buf_group = BUF_GROUP;
    c->recv_armed = 1;
}

static void queue_send(struct conn *c)
{
    struct io_uring_sqe *sqe = get_sqe(c, K_SEND);
    io_uring_prep_send(sqe, c->slot, c->b->out + c->b->out_off, c->b->out_len - c->b->out_off, MSG_NOSIGNAL);
    sqe->flags |= IOSQE_FIXED_FILE;
    c->busy = 1;
}

static void queue_work(struct conn *c)
{
    io_uring_prep_timeout(get_sqe(c, K_WORK), &work_time, 0, 0); /* its completion stands for the work */
    c->busy = 1;
}

/* Shut the socket down (which ends its armed receive), then free its slot. */
static void start_close(struct conn *c)
{
    if (c->closing)
        return;
    c->closing = 1;
    if (io_uring_sq_space_left(&ring) < 2 && io_uring_submit(&ring) < 0) /* keep the pair linked */
        die("io_uring_submit");
    struct io_uring_sqe *sqe = get_sqe(c, K_IGNORE);
    io_uring_prep_shutdown(sqe, c->slot, SHUT_RDWR);
    sqe->flags |= IOSQE_FIXED_FILE | IOSQE_IO_HARDLINK | IOSQE_CQE_SKIP_SUCCESS; /* close even if it fails */
    io_uring_prep_close_direct(get_sqe(c, K_CLOSE), (unsigned)c->slot);
}

static void return_buf(int bid)
{
    io_uring_buf_ring_add(buf_ring, bufs + (size_t)bid * BUF_SIZE, BUF_SIZE, (unsigned short)bid,
                          io_uring_buf_ring_mask(BUF_COUNT), 0);
    io_uring_buf_ring_advance(buf_ring, 1);
}

/* Copy what the held buffers have, as far as b->in has room, and give them back. A
 * connection gets its conn_buf here, when bytes arrive; a failed allocation closes it. */
static void drain_held(struct conn *c)
{
    if (c->held_head >= 0 && c->b == NULL && (c->b = take_buf()) == NULL) {
        start_close(c);
        return;
    }
    while (c->held_head >= 0 && c->b->in_len < sizeof c->b->in) {
        int bid = c->held_head;
        size_t n = held_len[bid] - c->held_off, room = sizeof c->b->in - c->b->in_len;
        if (n > room)
            n = room;
        memcpy(c->b->in + c->b->in_len, bufs + (size_t)bid * BUF_SIZE + c->held_off, n);
        c->b->in_len += n;
        c->held_off += n;
        if (c->held_off == held_len[bid]) {
            if ((c->held_head = held_next[bid]) < 0)
                c->held_tail = -1;
            c->held_off = 0;
            c->held_count--;
            return_buf(bid);
        }
    }
}

/* A connection with nothing in flight: answer what it holds, or wait for more input
 * (without its conn_buf, once it holds no partial request). */
static void next_step(struct conn *c)
{
    drain_held(c);
    if (c->closing)
        return;
    if (c->b != NULL) {
        c->b->out_len = c->b->out_off = 0;
        if (conn_take_requests(c->b, &opts)) {
            queue_work(c);
            return;
        }
        if (c->b->out_len > 0) {
            queue_send(c);
            return;
        }
        if (c->b->in_len == 0 && c->held_head < 0) {
            give_buf(c->b);
            c->b = NULL;
        }
    }
    if (c->peer_done)
        start_close(c);
    else if (!c->recv_armed && c->held_count == 0)
        arm_recv(c); /* its receive had ended (paused, or ENOBUFS) */
}

/* Once nothing of it is in flight: its buffers back to the ring, its memory freed. */
static void release_if_done(struct conn *c)
{
    if (!c->closing || c->ops > 0)
        return;
    for (int bid = c->held_head; bid >= 0; bid = held_next[bid])
        return_buf(bid);
    live_remove(&c->link);
    give_buf(c->b);
    free(c);
    if (!accepting && !stop_requested)
        arm_accept(); /* a slot is free again */
}

// BEGIN handlers
// BEGIN multishot
static void on_accept(struct io_uring_cqe *cqe)
{
    if (!(cqe->flags & IORING_CQE_F_MORE))
        accepting = 0;
    if (cqe->res >= 0) {
        struct conn *c = calloc(1, sizeof *c);
        if (c == NULL) {
            io_uring_prep_close_direct(get_sqe(NULL, K_IGNORE), (unsigned)cqe->res);
        } else {
            c->slot = cqe->res;
            c->held_head = c->held_tail = -1;
            live_add(&open_conns, &c->link);
            arm_recv(c);
        }
    } else if (cqe->res == -ENFILE || cqe->res == -EMFILE) {
        return; /* the table is full: release_if_done arms the accept again */
    } else if (cqe->res != -EINTR && cqe->res != -ECONNABORTED) {
        errno = -cqe->res;
        die("accept (io_uring, multishot)");
    }
    if (!accepting)
        arm_accept();
}

static void on_recv(struct conn *c, struct io_uring_cqe *cqe)
{
    int res = cqe->res;
    if (!(cqe->flags & IORING_CQE_F_MORE)) { /* this receive is over: EOF, error, ENOBUFS, cancel */
        c->recv_armed = 0;
        c->ops--;
    }
    if (cqe->flags & IORING_CQE_F_BUFFER) {
        int bid = (int)(cqe->flags >> IORING_CQE_BUFFER_SHIFT);
        if (res <= 0) {
            return_buf(bid);
        } else { /* queue it after what the connection holds, in order */
            held_len[bid] = (size_t)res;
            held_next[bid] = -1;
            if (c->held_tail >= 0)
                held_next[c->held_tail] = bid;
            else
                c->held_head = bid;
            c->held_tail = bid;
            c->held_count++;
            drain_held(c);
        }
    }
    if (c->closing) {
        release_if_done(c);
        return;
    }
    if (res == 0 || (res < 0 && res != -ENOBUFS && res != -ECANCELED))
        c->peer_done = 1;
    else if (c->recv_armed && c->held_count >= HOLD_MAX) /* b->in is full: stop reading for now */
        io_uring_prep_cancel64(get_sqe(NULL, K_IGNORE), (uint64_t)(uintptr_t)c | K_RECV, 0);
    else if (!c->recv_armed && c->held_count < HOLD_MAX)
        arm_recv(c);
    if (!c->busy)
        next_step(c); /* else the send or work in flight calls it when it completes */
}
// END multishot

static void on_work(struct conn *c) /* res is -ETIME: the timeout fired, the work is done */
{
    c->ops--;
    c->busy = 0;
    if (c->closing) {
        release_if_done(c);
        return;
    }
    conn_work_done(c->b);
    queue_send(c);
}

static void on_send(struct conn *c, int res)
{
    c->ops--;
    c->busy = 0;
    if (c->closing) {
        release_if_done(c);
    } else if (res < 0) {
        start_close(c);
    } else if ((c->b->out_off += (size_t)res) < c->b->out_len) {
        queue_send(c); /* a short send: the rest */
    } else if (c->b->close_after) {
        start_close(c);
    } else {
        next_step(c); /* pipelined requests may have arrived meanwhile */
    }
}
// END handlers

static void on_completion(struct io_uring_cqe *cqe)
{
    struct conn *c = (struct conn *)(uintptr_t)(cqe->user_data & ~(uint64_t)7);
    switch ((enum kind)(cqe->user_data & 7)) {
    case K_ACCEPT: on_accept(cqe); break;
    case K_RECV: on_recv(c, cqe); break;
    case K_SEND: on_send(c, cqe->res); break;
    case K_WORK: on_work(c); break;
    case K_CLOSE: c->ops--; release_if_done(c); break;
    case K_IGNORE: break; /* a failed shutdown, a cancel, an orphan slot's close */
    }
}

/* The ring with the most advised setup flags this kernel accepts. */
static void setup_ring(void)
{
    ring_init(&ring, RING_ENTRIES, CQ_ENTRIES, ring_taskrun_tries);
    /* Multishot receive came in 6.0 with IORING_OP_SEND_ZC, which the probe can see. */
    static const int needs[] = {IORING_OP_SEND_ZC};
    ring_require(&ring, "io_uring multishot receive", needs, 1);
    (void)io_uring_register_ring_fd(&ring); /* 5.18; without it, each enter looks the ring up */
    ring_register_direct(&ring);
    if (posix_memalign((void **)&buf_ring, 4096, BUF_COUNT * sizeof(struct io_uring_buf)) != 0 ||
        (bufs = malloc((size_t)BUF_COUNT * BUF_SIZE)) == NULL)
        die("malloc(provided buffers)");
    struct io_uring_buf_reg reg = {.ring_addr = (uint64_t)(uintptr_t)buf_ring, .ring_entries = BUF_COUNT, .bgid = BUF_GROUP};
    int ret = io_uring_register_buf_ring(&ring, &reg, 0);
    if (ret == -EINVAL)
        ring_unsupported("io_uring_register_buf_ring", -ret);
    ring_check(ret, "io_uring_register_buf_ring");
    io_uring_buf_ring_init(buf_ring);
    for (int bid = 0; bid < BUF_COUNT; bid++)
        return_buf(bid);
}

int main(int argc, char **argv)
{
    parse_options(argc, argv, &opts, NULL);
    install_signals();
    setup_ring();
    work_time = ring_timeout_ms(opts.work_ms);
    live_init(&open_conns);
    listen_fd = listen_socket(&opts, 0, 0);
    int one = 1; /* inherited by every accepted socket (see the top) */
    if (setsockopt(listen_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
        die("setsockopt(TCP_NODELAY)");
    arm_accept();
    announce_ready(listen_fd);
    ring_loop(&ring, on_completion); /* its wait runs the deferred task work (GETEVENTS) */
    io_uring_queue_exit(&ring); /* cancels what is in flight, closes the slots; then free */
    for (struct live *n; (n = live_first(&open_conns)) != NULL;) {
        live_remove(n);
        struct conn *c = live_owner(n, struct conn, link);
        free(c->b);
        free(c);
    }
    while (spares > 0)
        free(spare[--spares]);
    free(bufs);
    free(buf_ring);
    close(listen_fd);
    return 0;
}
