/*
 * A log-linear histogram of non-negative 64-bit values, laid out as HdrHistogram lays out
 * its buckets: values below 2^(b+1) have a bucket each; above that, every power of two is
 * cut into 2^b equal buckets, so no bucket is wider than 1/2^b of the values it holds.
 * b = 7 keeps the error under 0.8% (iom-echoload); b = 10 under 0.1%, HdrHistogram's
 * "3 significant digits" (iom-openloop). The counts take a fixed (65 - b) x 2^b longs,
 * however many values and however large: every int64 has a bucket.
 *
 * A value read back (hist_value_at) is the largest value of its bucket, never more than
 * the largest value recorded: a percentile is never reported lower than it was.
 */
#ifndef IOM_HIST_H
#define IOM_HIST_H

#include <stdint.h>

struct hist {
    int sub_bits, buckets;
    long *counts;
    long total;
    int64_t max, sum;
};

int hist_init(struct hist *h, int sub_bits); /* 0, or -1 with errno set (calloc) */
void hist_reset(struct hist *h);
void hist_record(struct hist *h, int64_t v); /* a negative value counts as 0 */
int hist_bucket(const struct hist *h, uint64_t v);
int64_t hist_bucket_high(const struct hist *h, int i); /* the largest value of bucket i */
int64_t hist_value_at(const struct hist *h, double percentile); /* 0 when empty */

#endif
