/*
 * ring.h: what the io_uring servers (c-uring, its chain's steps, c-uring-multishot) share
 * besides their handlers: the ring's setup (with the task-run flags and the registered file
 * table where a server asks for them), a submission slot that is always there, --work-ms as
 * a timeout, and the loop that submits, waits, and hands every completion to the server.
 * Linked only into those, with -luring: the other servers never see liburing.
 *
 * liburing returns -errno where libc would set errno; a setup this kernel cannot do exits
 * 77 (a skip), any other failure exits 1 naming the call.
 */
#ifndef IOM_RING_H
#define IOM_RING_H

#include <liburing.h>
#include <stddef.h>

#define RING_MAX_SLOTS (1 << 20) /* the kernel's limit on registered files */
#ifndef IORING_SETUP_SINGLE_ISSUER /* kernel 6.0, 6.1: values from linux/io_uring.h */
#define IORING_SETUP_SINGLE_ISSUER (1U << 12)
#endif
#ifndef IORING_SETUP_DEFER_TASKRUN
#define IORING_SETUP_DEFER_TASKRUN (1U << 13)
#endif

/* ring_init's tries for the task-run flags, most advised first: SINGLE_ISSUER | DEFER_TASKRUN (6.1: the kernel
 * runs completions' task work when the loop waits, never interrupting it), SINGLE_ISSUER | COOP_TASKRUN, then
 * COOP_TASKRUN (5.19: no interrupt to notify the task), then none. */
extern const unsigned ring_taskrun_tries[];

/* Exit 77 after "what: strerror(err): not supported here". */
_Noreturn void ring_unsupported(const char *what, int err);

/* Exit 1 naming `call` if ret, what liburing returned, is an error. */
void ring_check(int ret, const char *call);

/* Set up `ring` with `entries` submission slots, and cq_entries completion slots unless 0
 * (then the kernel's default). tries: setup flags, most wanted first, ending in 0 (none);
 * each is tried while the kernel refuses the one before (EINVAL). NULL: no setup flags.
 * Exit 77 where there is no io_uring, it is forbidden, or every try is refused. */
void ring_init(struct io_uring *ring, unsigned entries, unsigned cq_entries, const unsigned *tries);

/* Exit 77 naming `what` unless the ring supports every opcode in ops. */
void ring_require(struct io_uring *ring, const char *what, const int *ops, size_t n);

/* A sparse table of registered files (direct descriptors) as large as RLIMIT_NOFILE allows, at most
 * RING_MAX_SLOTS; exit 1 naming the call if the kernel refuses it. */
void ring_register_direct(struct io_uring *ring);

/* A free submission slot: when the ring is full, what is queued is submitted to make room. */
struct io_uring_sqe *ring_sqe(struct io_uring *ring);

/* ms milliseconds as an io_uring timeout (--work-ms: its completion stands for the work). */
struct __kernel_timespec ring_timeout_ms(double ms);

/* The loop, until a stop is requested: submit what is queued and wait for a completion,
 * in one call, then hand every completion there is to on_completion. */
void ring_loop(struct io_uring *ring, void (*on_completion)(struct io_uring_cqe *cqe));

#endif
