/*
 * gen.h: what both load generators (iom-openloop, iom-echoload) need besides their histogram:
 * the monotonic clock, a fatal error that names the call that failed, a number argument.
 */
#ifndef IOM_GEN_H
#define IOM_GEN_H

#include <stdint.h>

int64_t now_ns(void); /* CLOCK_MONOTONIC, in nanoseconds */
_Noreturn void die(const char *what); /* "PROGRAM: what: strerror(errno)" on stderr, exit 1 */
/* A number in [lo, hi], and a whole one if `whole`; the whole string must be it. 1, or 0 if not. */
int parse_number(const char *s, double lo, double hi, int whole, double *out);

#endif
