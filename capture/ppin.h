/*
 * ppin.h -- --pin-loops: which CPU each proxy event loop runs on.
 */
#ifndef MT_CAPTURE_PPIN_H
#define MT_CAPTURE_PPIN_H

#include <pthread.h>
#include <sched.h>

/*
 * Sets attr's CPU affinity to the (i mod n)-th of the n CPUs in allowed
 * (the process's affinity mask when the proxy started), as HAProxy's
 * cpu-map auto:1/1-N 0-(N-1) does for its threads.  Returns 0 or a
 * positive errno (EINVAL: allowed is empty).
 */
int ppin_attr_set(pthread_attr_t *attr, const cpu_set_t *allowed, int i);

#endif
