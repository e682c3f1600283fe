/*
 * pmqos.h -- hold a PM QoS CPU wake-up latency request while serving.
 *
 * An idle CPU that halts (or, in a virtual machine, gives its vCPU back to
 * the host) takes tens of microseconds to wake for a timer or a packet; on
 * the 2-vCPU Firecracker guest this project is measured on, a 1 ms timerfd
 * sleep wakes 42 us late at p50 with halting and 21 us with the request
 * below (docs/benchmarks.md).  Writing a latency bound in microseconds to
 * /dev/cpu_dma_latency and keeping the file open asks the cpuidle governor
 * to use only idle states that exit faster than that bound; 0 keeps idle
 * CPUs polling.  cyclictest(8) holds 0 for the same reason; tuned's
 * latency-performance profile holds 1 (force_latency).  The request is
 * dropped by the kernel when the file is closed, the process's exit
 * included.  Idle CPUs that poll use power (and, in a VM, host CPU time).
 */
#ifndef MT_PMQOS_H
#define MT_PMQOS_H

#include "core/err.h"

#define PMQOS_DEV "/dev/cpu_dma_latency"
#define PMQOS_US_MAX 2000000000

struct pmqos {
    int fd; /* -1 when nothing is held */
    int us;
};

/* Sets q to hold nothing. */
void pmqos_init(struct pmqos *q);

/*
 * Asks for a CPU wake-up latency of at most `us` microseconds
 * (0..PMQOS_US_MAX) until pmqos_release(); replaces an earlier request of
 * q.  Returns MT_OK, MT_EUSAGE for a bound out of range, or -errno with err
 * filled (EACCES without root, ENOENT on a kernel without PM QoS).
 */
int pmqos_hold(struct pmqos *q, int us, struct mt_err *err);

/* pmqos_hold() on another path: for tests. */
int pmqos_hold_at(struct pmqos *q, const char *path, int us,
                  struct mt_err *err);

/* Drops q's request, if any.  Idempotent. */
void pmqos_release(struct pmqos *q);

/*
 * Reads the latency bound the kernel applies now (the smallest request of
 * every holder) into *us.  Returns MT_OK or -errno.
 */
int pmqos_current(int *us);

#endif
