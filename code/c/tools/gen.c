/* What the load generators share besides their histogram: see gen.h. */
#define _GNU_SOURCE
#include "gen.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

_Noreturn void die(const char *what)
{
    fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, what, strerror(errno));
    exit(1);
}

int parse_number(const char *s, double lo, double hi, int whole, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !(v >= lo && v <= hi) || (whole && v != (double)(long)v))
        return 0;
    *out = v;
    return 1;
}

int parse_int(const char *s, int lo, int hi, int *out)
{
    double v;
    if (!parse_number(s, lo, hi, 1, &v))
        return 0;
    *out = (int)v;
    return 1;
}

int take_flags(int argc, char **argv, const struct option *opts, int (*take)(int flag, const char *value))
{
    int o, opt_index = 0;
    while ((o = getopt_long(argc, argv, "", opts, &opt_index)) != -1) {
        if (o == 0)
            continue; /* a switch: getopt_long has set its int */
        if (o == '?')
            return 0; /* getopt_long has named the flag */
        if (!take(o, optarg)) {
            fprintf(stderr, "%s: --%s: bad value '%s'\n", program_invocation_short_name, opts[opt_index].name,
                    optarg);
            return 0;
        }
    }
    return 1;
}

_Noreturn void bad_usage(const char *why, const char *usage, int status)
{
    if (why != NULL)
        fprintf(stderr, "%s: %s\n", program_invocation_short_name, why);
    fprintf(stderr, usage, program_invocation_name);
    exit(status);
}

void watch_fd(int epfd, int fd, uint32_t *watched, uint32_t events, uint64_t tag)
{
    if (events == *watched)
        return;
    struct epoll_event ev = {.events = events, .data.u64 = tag};
    if (epoll_ctl(epfd, *watched ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev) != 0)
        die("epoll_ctl");
    *watched = events;
}

int wait_until(int epfd, struct epoll_event *events, int max, int64_t until, const sigset_t *mask)
{
    int64_t wait = until == INT64_MAX ? 1000000000 : until - now_ns();
    wait = wait < 0 ? 0 : wait;
    struct timespec t = {.tv_sec = wait / 1000000000, .tv_nsec = wait % 1000000000};
    int n = epoll_pwait2(epfd, events, max, &t, mask);
    if (n < 0 && errno == ENOSYS) /* before Linux 5.11: whole milliseconds, rounded up */
        n = epoll_pwait(epfd, events, max, (int)((wait + 999999) / 1000000), mask);
    if (n < 0 && errno != EINTR)
        die("epoll_pwait2");
    return n < 0 ? 0 : n;
}

int connect_result(int fd)
{
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        die("getsockopt SO_ERROR");
    return err;
}
