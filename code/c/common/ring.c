/*
 * ring.c: see ring.h.
 */
#define _GNU_SOURCE
#include "ring.h"
#include "server.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

const unsigned ring_taskrun_tries[] = {IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
                                       IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN,
                                       IORING_SETUP_COOP_TASKRUN, 0};

_Noreturn void ring_unsupported(const char *what, int err)
{
    fprintf(stderr, "%s: %s: not supported here\n", what, strerror(err));
    exit(EXIT_UNSUPPORTED);
}

void ring_check(int ret, const char *call)
{
    if (ret < 0) {
        errno = -ret;
        die(call);
    }
}

void ring_init(struct io_uring *ring, unsigned entries, unsigned cq_entries, const unsigned *tries)
{
    static const unsigned none[] = {0};
    unsigned sizes = cq_entries ? IORING_SETUP_CQSIZE | IORING_SETUP_CLAMP : 0;
    int ret = -EINVAL;
    for (const unsigned *flags = tries ? tries : none; ret == -EINVAL; flags++) {
        struct io_uring_params p = {.flags = *flags | sizes, .cq_entries = cq_entries};
        ret = io_uring_queue_init_params(entries, ring, &p);
        if (*flags == 0)
            break; /* the last try */
    }
    if (ret == -ENOSYS || ret == -EPERM || ret == -EOPNOTSUPP || ret == -EINVAL)
        ring_unsupported("io_uring_queue_init_params", -ret);
    ring_check(ret, "io_uring_queue_init_params");
}

void ring_require(struct io_uring *ring, const char *what, const int *ops, size_t n)
{
    struct io_uring_probe *probe = io_uring_get_probe_ring(ring);
    int ok = probe != NULL;
    for (size_t i = 0; ok && i < n; i++)
        ok = io_uring_opcode_supported(probe, ops[i]);
    if (probe != NULL)
        io_uring_free_probe(probe);
    if (!ok)
        ring_unsupported(what, ENOSYS);
}

void ring_register_direct(struct io_uring *ring)
{
    struct rlimit lim;
    if (getrlimit(RLIMIT_NOFILE, &lim) != 0)
        die("getrlimit(RLIMIT_NOFILE)");
    unsigned slots = lim.rlim_cur < RING_MAX_SLOTS ? (unsigned)lim.rlim_cur : RING_MAX_SLOTS;
    ring_check(io_uring_register_files_sparse(ring, slots), "io_uring_register_files_sparse");
}

struct io_uring_sqe *ring_sqe(struct io_uring *ring)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
    if (sqe == NULL) { /* ring full: submit what is queued to make room */
        if (io_uring_submit(ring) < 0)
            die("io_uring_submit");
        if ((sqe = io_uring_get_sqe(ring)) == NULL)
            die("io_uring_get_sqe");
    }
    return sqe;
}

struct __kernel_timespec ring_timeout_ms(double ms)
{
    struct timespec t = timespec_ms(ms);
    return (struct __kernel_timespec){.tv_sec = t.tv_sec, .tv_nsec = t.tv_nsec};
}

// BEGIN loop
void ring_loop(struct io_uring *ring, void (*on_completion)(struct io_uring_cqe *cqe))
{
    while (!stop_requested) {
        /* With IORING_SETUP_DEFER_TASKRUN, the kernel's deferred completion work runs here
         * (io_uring_enter with GETEVENTS). */
        int ret = io_uring_submit_and_wait(ring, 1);
        if (ret == -EINTR)
            continue;
        ring_check(ret, "io_uring_submit_and_wait");
        struct io_uring_cqe *cqe;
        unsigned head, seen = 0;
        io_uring_for_each_cqe(ring, head, cqe) {
            on_completion(cqe);
            seen++;
        }
        io_uring_cq_advance(ring, seen);
    }
}
// END loop
