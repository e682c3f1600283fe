/*
 * tracelat.h -- server service times from a trace: each reply (s2c) is
 * paired with its request (c2s) on the same connection by responseTo ==
 * requestID (wire header bytes 4..11, read through core/rd.h), and the
 * difference of their timestamps is one sample.  Unanswered requests and
 * replies without a request are counted, not sampled.
 */
#ifndef MT_SIM_TRACELAT_H
#define MT_SIM_TRACELAT_H

#include <stddef.h>

#include "core/err.h"

#define SIM_TRACE_SAMPLES_MAX (10u * 1000 * 1000)

struct sim_tracelat {
    double *us; /* owned: request->reply latencies, microseconds */
    size_t n;
    size_t unmatched;  /* replies with no request */
    size_t unanswered; /* requests with no reply */
};

/*
 * Reads path.  Returns 0 with out filled (free with sim_tracelat_free), or
 * a negative code with err (unreadable or corrupt trace, no pairs at all).
 * A trace damaged at its end still yields the samples before the damage
 * (with a warning on stderr).
 */
int sim_tracelat_load(const char *path, struct sim_tracelat *out,
                      struct mt_err *err);

void sim_tracelat_free(struct sim_tracelat *t);

#endif
