/*
 * check.h: the one assertion of the C unit tests. CHECK(cond) reports a false condition
 * with its place and goes on, so that one run shows every failure; checks_done(name)
 * prints the verdict and is main's exit status.
 */
#ifndef IOM_CHECK_H
#define IOM_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                               \
        }                                                                             \
    } while (0)

/* "NAME: all checks passed" on stdout and 0, or "NAME: N check(s) failed" on stderr and 1. */
static inline int checks_done(const char *name)
{
    if (failures) {
        fprintf(stderr, "%s: %d check(s) failed\n", name, failures);
        return 1;
    }
    printf("%s: all checks passed\n", name);
    return 0;
}

#endif
