/*
 * openloop_report.c: what iom-openloop prints (see openloop.c, openloop.h): the OPENLOOP
 * line of JSON on stdout, a summary for a reader on stderr, and the --hist file.
 */
#define _GNU_SOURCE
#include "openloop.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"

static void put_ms(const char *key, const struct hist *h, double p)
{
    if (h->total == 0)
        printf(", \"%s\": null", key);
    else if (p < 0) /* the mean */
        printf(", \"%s\": %.6f", key, (double)h->sum / (double)h->total / 1e6);
    else
        printf(", \"%s\": %.6f", key, (double)hist_value_at(h, p) / 1e6);
}

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

void write_hist(FILE *f, const char *path)
{
    fprintf(f, "upper_us,count\n");
    for (int i = 0; i < st.latency.buckets; i++) {
        if (st.latency.counts[i])
            fprintf(f, "%.3f,%ld\n", (double)hist_bucket_high(&st.latency, i) / 1e3, st.latency.counts[i]);
    }
    int failed = ferror(f);
    if (fclose(f) != 0 || failed) {
        fprintf(stderr, "iom-openloop: write %s: %s\n", path, strerror(errno));
        exit(1);
    }
}

void report(int64_t end)
{
    check_books();
    long *o = st.outcome;
    int n = cfg.connections, last = bucket_of(end), run = 0, stall = 0;
    long *answers = malloc((size_t)n * sizeof *answers), served = 0;
    if (answers == NULL)
        die("malloc");
    for (int i = 0; i < n; i++) {
        answers[i] = conns[i].answers;
        served += answers[i] > 0;
    }
    qsort(answers, (size_t)n, sizeof *answers, cmp_long);
    for (int b = 0; b <= last; b++) {
        run = st.busy[b] && st.done[b] == 0 ? run + 1 : 0;
        stall = run > stall ? run : stall;
    }
    printf("OPENLOOP {\"mode\": \"%s\", \"rate\": %.10g, \"poisson\": %s, \"seed\": %llu, \"connections\": %d, "
           "\"pipeline\": %d, \"max_in_flight\": %ld, \"close\": %s, \"close_every\": %d, \"protocol\": \"%s\", "
           "\"request_bytes\": %zu, "
           "\"duration_s\": %.10g, \"timeout_s\": %.10g, "
           "\"elapsed_s\": %.6f, \"offered\": %ld, \"sent\": %ld, \"ok\": %ld, \"non2xx\": %ld, \"timeouts\": %ld, "
           "\"errors_connect\": %ld, \"resets\": %ld, \"dropped\": %ld, \"achieved_rps\": %.3f",
           cfg.open ? "open" : "closed", cfg.open ? cfg.rate : 0, cfg.poisson ? "true" : "false",
           (unsigned long long)cfg.seed, n, cfg.pipeline, cfg.max_in_flight, cfg.close_mode ? "true" : "false",
           cfg.close_every, cfg.frame ? "frame" : "http", cfg.request_len, cfg.duration, cfg.timeout, (double)(end - start_ns) / 1e9,
           st.offered, st.sent, o[OK], o[NON2XX], o[TIMEOUT], o[CONNECT_ERROR], o[RESET], o[DROPPED],
           /* answers over the whole run, drain included: over the schedule's duration alone, a server
              that answered late would be credited with a rate it never kept */
           end > start_ns ? (double)o[OK] / ((double)(end - start_ns) / 1e9) : 0.0);
    put_ms("p50_ms", &st.latency, 50);
    put_ms("p90_ms", &st.latency, 90);
    put_ms("p99_ms", &st.latency, 99);
    put_ms("p99_9_ms", &st.latency, 99.9);
    put_ms("p99_99_ms", &st.latency, 99.99);
    put_ms("max_ms", &st.latency, 100);
    put_ms("mean_ms", &st.latency, -1);
    put_ms("send_lag_p99_ms", &st.lag, 99);
    put_ms("send_lag_max_ms", &st.lag, 100);
    printf(", \"in_flight_max\": %ld, \"queue_max\": %ld, \"conns_served\": %ld, \"conn_min_requests\": %ld, "
           "\"conn_median_requests\": %.1f, \"conn_max_requests\": %ld, \"connects\": %ld, \"connect_failures\": %ld, "
           "\"bad_responses\": %ld, \"stall_s\": %.1f, \"gap_max_ms\": %.3f, \"timeline_ms\": %lld, \"timeline\": [",
           st.in_flight_max, st.queue_max, served, answers[0],
           n % 2 ? (double)answers[n / 2] : (double)(answers[n / 2 - 1] + answers[n / 2]) / 2.0, answers[n - 1],
           st.connects, st.connect_failures, st.bad_responses, (double)stall * BUCKET_NS / 1e9,
           (double)st.gap_max / 1e6, BUCKET_NS / 1000000);
    for (int b = 0; b <= last; b++)
        printf("%s%ld", b ? ", " : "", st.done[b]);
    printf("], \"timeline_busy\": [");
    for (int b = 0; b <= last; b++)
        printf("%s%d", b ? ", " : "", st.busy[b]);
    printf("]}\n");
    if (fflush(stdout) != 0)
        die("write stdout");
    fprintf(stderr, "iom-openloop: %s, %.2f s: %ld offered, %ld ok, %ld non2xx, %ld timeouts, %ld connect errors, "
                    "%ld resets, %ld dropped; p50 %.3f p99 %.3f max %.3f ms\n",
            cfg.open ? "open" : "closed", (double)(end - start_ns) / 1e9, st.offered, o[OK], o[NON2XX], o[TIMEOUT],
            o[CONNECT_ERROR], o[RESET], o[DROPPED], (double)hist_value_at(&st.latency, 50) / 1e6,
            (double)hist_value_at(&st.latency, 99) / 1e6, (double)st.latency.max / 1e6);
    if (st.connect_failures)
        fprintf(stderr, "iom-openloop: %ld connects failed, the last in %s: %s\n", st.connect_failures, st.last_call,
                strerror(st.last_errno));
    if (cfg.open && st.lag.max > 1000000)
        fprintf(stderr, "iom-openloop: the generator itself took requests up to %.3f ms late (p99 %.3f ms)\n",
                (double)st.lag.max / 1e6, (double)hist_value_at(&st.lag, 99) / 1e6);
    free(answers);
}
