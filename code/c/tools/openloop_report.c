/*
 * openloop_report.c: what iom-openloop prints (see openloop.c, openloop.h): the OPENLOOP
 * line of JSON on stdout, a summary for a reader on stderr, and the --hist file; it reads the
 * scheduler's books and the connections' counts, and changes neither.
 */
#define _GNU_SOURCE
#include "openloop.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "openloop_conn.h"
#include "openloop_schedule.h"

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

void write_hist(const struct sched *s, FILE *f, const char *path)
{
    const struct hist *h = &s->books.latency;
    fprintf(f, "upper_us,count\n");
    for (int i = 0; i < h->buckets; i++) {
        if (h->counts[i])
            fprintf(f, "%.3f,%ld\n", (double)hist_bucket_high(h, i) / 1e3, h->counts[i]);
    }
    int failed = ferror(f);
    if (fclose(f) != 0 || failed) {
        fprintf(stderr, "iom-openloop: write %s: %s\n", path, strerror(errno));
        exit(1);
    }
}

void report(const struct config *cfg, const struct sched *s, const struct conns *cs, int64_t end)
{
    check_books(s);
    const struct books *st = &s->books;
    const struct conn_stats *cst = &cs->stats;
    const long *o = st->outcome;
    int64_t start_ns = s->start_ns;
    int n = cfg->connections, last = bucket_of(s, end), run = 0, stall = 0;
    long *answers = malloc((size_t)n * sizeof *answers), served = 0;
    if (answers == NULL)
        die("malloc");
    for (int i = 0; i < n; i++) {
        answers[i] = s->places[i].answers;
        served += answers[i] > 0;
    }
    qsort(answers, (size_t)n, sizeof *answers, cmp_long);
    for (int b = 0; b <= last; b++) {
        run = st->busy[b] && st->done[b] == 0 ? run + 1 : 0;
        stall = run > stall ? run : stall;
    }
    printf("OPENLOOP {\"mode\": \"%s\", \"rate\": %.10g, \"poisson\": %s, \"seed\": %llu, \"connections\": %d, "
           "\"pipeline\": %d, \"max_in_flight\": %ld, \"close\": %s, \"close_every\": %d, \"protocol\": \"%s\", "
           "\"request_bytes\": %zu, "
           "\"duration_s\": %.10g, \"timeout_s\": %.10g, "
           "\"elapsed_s\": %.6f, \"offered\": %ld, \"sent\": %ld, \"ok\": %ld, \"non2xx\": %ld, \"timeouts\": %ld, "
           "\"errors_connect\": %ld, \"resets\": %ld, \"dropped\": %ld, \"achieved_rps\": %.3f",
           cfg->open ? "open" : "closed", cfg->open ? cfg->rate : 0, cfg->poisson ? "true" : "false",
           (unsigned long long)cfg->seed, n, cfg->pipeline, cfg->max_in_flight, cfg->close_mode ? "true" : "false",
           cfg->close_every, cfg->frame ? "frame" : "http", cfg->request_len, cfg->duration, cfg->timeout,
           (double)(end - start_ns) / 1e9,
           st->offered, cst->sent, o[OK], o[NON2XX], o[TIMEOUT], o[CONNECT_ERROR], o[RESET], o[DROPPED],
           /* answers over the whole run, drain included: over the schedule's duration alone, a server
              that answered late would be credited with a rate it never kept */
           end > start_ns ? (double)o[OK] / ((double)(end - start_ns) / 1e9) : 0.0);
    put_ms("p50_ms", &st->latency, 50);
    put_ms("p90_ms", &st->latency, 90);
    put_ms("p99_ms", &st->latency, 99);
    put_ms("p99_9_ms", &st->latency, 99.9);
    put_ms("p99_99_ms", &st->latency, 99.99);
    put_ms("max_ms", &st->latency, 100);
    put_ms("mean_ms", &st->latency, -1);
    put_ms("send_lag_p99_ms", &st->lag, 99);
    put_ms("send_lag_max_ms", &st->lag, 100);
    printf(", \"in_flight_max\": %ld, \"queue_max\": %ld, \"conns_served\": %ld, \"conn_min_requests\": %ld, "
           "\"conn_median_requests\": %.1f, \"conn_max_requests\": %ld, \"connects\": %ld, \"connect_failures\": %ld, "
           "\"bad_responses\": %ld, \"stall_s\": %.1f, \"gap_max_ms\": %.3f, \"timeline_ms\": %lld, \"timeline\": [",
           st->in_flight_max, st->queue_max, served, answers[0],
           n % 2 ? (double)answers[n / 2] : (double)(answers[n / 2 - 1] + answers[n / 2]) / 2.0, answers[n - 1],
           cst->connects, cst->connect_failures, cst->bad_responses, (double)stall * BUCKET_NS / 1e9,
           (double)st->gap_max / 1e6, BUCKET_NS / 1000000);
    for (int b = 0; b <= last; b++)
        printf("%s%ld", b ? ", " : "", st->done[b]);
    printf("], \"timeline_busy\": [");
    for (int b = 0; b <= last; b++)
        printf("%s%d", b ? ", " : "", st->busy[b]);
    printf("]}\n");
    if (fflush(stdout) != 0)
        die("write stdout");
    fprintf(stderr, "iom-openloop: %s, %.2f s: %ld offered, %ld ok, %ld non2xx, %ld timeouts, %ld connect errors, "
                    "%ld resets, %ld dropped; p50 %.3f p99 %.3f max %.3f ms\n",
            cfg->open ? "open" : "closed", (double)(end - start_ns) / 1e9, st->offered, o[OK], o[NON2XX], o[TIMEOUT],
            o[CONNECT_ERROR], o[RESET], o[DROPPED], (double)hist_value_at(&st->latency, 50) / 1e6,
            (double)hist_value_at(&st->latency, 99) / 1e6, (double)st->latency.max / 1e6);
    if (cst->connect_failures)
        fprintf(stderr, "iom-openloop: %ld connects failed, the last in %s: %s\n", cst->connect_failures,
                cst->last_call, strerror(cst->last_errno));
    if (cfg->open && st->lag.max > 1000000)
        fprintf(stderr, "iom-openloop: the generator itself took requests up to %.3f ms late (p99 %.3f ms)\n",
                (double)st->lag.max / 1e6, (double)hist_value_at(&st->lag, 99) / 1e6);
    free(answers);
}
