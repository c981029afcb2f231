/* The load generators' latency histogram: see hist.h. */
#include "hist.h"

#include <stdlib.h>
#include <string.h>

int hist_init(struct hist *h, int sub_bits)
{
    memset(h, 0, sizeof *h);
    h->sub_bits = sub_bits;
    h->buckets = (64 - sub_bits + 1) << sub_bits;
    h->counts = calloc((size_t)h->buckets, sizeof *h->counts);
    return h->counts == NULL ? -1 : 0;
}

void hist_reset(struct hist *h)
{
    memset(h->counts, 0, (size_t)h->buckets * sizeof *h->counts);
    h->total = 0;
    h->max = h->sum = 0;
}

// BEGIN histogram
/* Values below 2 * SUB have a bucket each; above, every power of two has SUB buckets. */
int hist_bucket(const struct hist *h, uint64_t v)
{
    int b = h->sub_bits;
    if (v < (2ULL << b))
        return (int)v;
    int shift = 63 - __builtin_clzll(v) - b; /* how many low bits a bucket ignores */
    return ((shift + 1) << b) + (int)((v >> shift) - (1ULL << b));
}

int64_t hist_bucket_high(const struct hist *h, int i)
{
    int b = h->sub_bits;
    if (i < (2 << b))
        return i;
    int shift = (i >> b) - 1;
    int64_t sub = (int64_t)(1 << b) + (i & ((1 << b) - 1));
    return (sub << shift) + ((int64_t)1 << shift) - 1;
}

void hist_record(struct hist *h, int64_t v)
{
    v = v < 0 ? 0 : v;
    h->counts[hist_bucket(h, (uint64_t)v)]++;
    h->total++;
    h->sum += v;
    h->max = v > h->max ? v : h->max;
}

/* The value at or below which `percentile` % of the recorded values lie: the first
 * bucket whose running count reaches percentile/100 x total (HdrHistogram's rule). */
int64_t hist_value_at(const struct hist *h, double percentile)
{
    double rank = percentile / 100.0 * (double)h->total;
    long seen = 0;
    for (int i = 0; i < h->buckets && h->total > 0; i++) {
        seen += h->counts[i];
        if (seen > 0 && (double)seen >= rank) {
            int64_t v = hist_bucket_high(h, i);
            return v < h->max ? v : h->max;
        }
    }
    return 0;
}
// END histogram
