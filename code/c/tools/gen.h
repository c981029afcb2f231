/*
 * gen.h: what the load generators (iom-openloop, iom-echoload, iom-idle) share besides
 * iom-openloop's and iom-echoload's histogram (hist.h): the monotonic clock, a fatal error
 * that names the call that failed, the command line (long flags only, a number argument,
 * the usage), and the epoll of their non-blocking connections.
 */
#ifndef IOM_GEN_H
#define IOM_GEN_H

#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <sys/epoll.h>

int64_t now_ns(void); /* CLOCK_MONOTONIC, in nanoseconds */
_Noreturn void die(const char *what); /* "PROGRAM: what: strerror(errno)" on stderr, exit 1 */

/* ---- the command line ---- */

/* A number in [lo, hi], and a whole one if `whole`; the whole string must be it. 1, or 0 if not. */
int parse_number(const char *s, double lo, double hi, int whole, double *out);
/* A whole number in [lo, hi] into an int; the whole string must be it. 1, or 0 if not. */
int parse_int(const char *s, int lo, int hi, int *out);
/* Every flag of argv, in turn, to take(its val in opts, its value): getopt_long, long flags
 * only; a switch with a flag pointer in opts (getopt_long sets its int) never reaches take().
 * 1 if take() took them all; 0 after a flag getopt_long rejected (it has said so) or a value
 * take() refused ("PROGRAM: --FLAG: bad value 'V'" on stderr). optind is then the index of
 * the first argument after the flags. */
int take_flags(int argc, char **argv, const struct option *opts, int (*take)(int flag, const char *value));
/* A bad command line: "PROGRAM: why" (unless why is NULL), then `usage` with argv[0] for
 * its %s, on stderr; exit with status. */
_Noreturn void bad_usage(const char *why, const char *usage, int status);

/* ---- non-blocking connections over epoll ---- */

/* Have epoll report `events` for fd, tagged `tag`; *watched is what it reports now (0: fd is
 * not in the set yet), and is updated. One epoll_ctl per change, none for no change. */
void watch_fd(int epfd, int fd, uint32_t *watched, uint32_t events, uint64_t tag);
/* Wait for up to max events until `until` (on now_ns's clock; INT64_MAX: 1 s at most), to
 * the nanosecond (epoll_pwait2), or before Linux 5.11 to the millisecond, rounded up. The
 * signal mask is `mask` meanwhile (NULL: unchanged). Returns how many came (0 on EINTR). */
int wait_until(int epfd, struct epoll_event *events, int max, int64_t until, const sigset_t *mask);
/* How a non-blocking connect() on fd ended (epoll said writable): 0, or its errno. */
int connect_result(int fd);

#endif
