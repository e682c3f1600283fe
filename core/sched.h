/*
 * sched.h -- optional real-time scheduling for the threads that keep time.
 *
 * A latency tool on a shared host is only as punctual as the scheduler lets
 * it be: under CFS a loop whose timer fires while the client or the trace
 * writer holds the core wakes up to several milliseconds late (see
 * docs/benchmarks.md, "timer wake-up lateness").  `--rt-prio N` puts the
 * event-loop threads under SCHED_FIFO at priority N, as cyclictest(8) does
 * for its measuring threads; threads that only do bulk work (the trace
 * writer) stay, or go back to, SCHED_OTHER.  Linux's RT throttling
 * (sched_rt_runtime_us, 95 % by default) bounds what a runaway spinner can
 * take from the rest of the machine.
 */
#ifndef MT_SCHED_H
#define MT_SCHED_H

#include "core/err.h"

#define SCHED_RT_PRIO_MAX 99

/*
 * Puts the calling thread under SCHED_FIFO at prio (1..SCHED_RT_PRIO_MAX);
 * prio 0 leaves its policy alone.  Returns MT_OK, MT_EUSAGE for a prio out
 * of range, or -errno (EPERM without CAP_SYS_NICE / RLIMIT_RTPRIO) with
 * err filled.  Threads the caller creates afterwards inherit the policy.
 */
int sched_set_realtime(int prio, struct mt_err *err);

/*
 * Puts the calling thread back under SCHED_OTHER (nice unchanged).  For
 * bulk-work threads created by a real-time thread.  Returns MT_OK or -errno.
 */
int sched_set_normal(void);

/*
 * Puts the calling thread under SCHED_BATCH (nice unchanged): it weighs as
 * much as a SCHED_OTHER thread of the same nice, but its wake-ups never
 * preempt the task running on its CPU (the scheduler tick does).  For
 * forwarding loops on a host that runs nothing else (capture
 * --batch-loops).  No privilege is needed.  Returns MT_OK or -errno.
 */
int sched_set_batch(void);

/* The calling thread's policy (SCHED_OTHER, SCHED_BATCH, SCHED_FIFO, ...),
 * -1 if it cannot be read. */
int sched_policy(void);

/* The calling thread's policy is SCHED_FIFO or SCHED_RR: 1, else 0. */
int sched_is_realtime(void);

/*
 * Warns (as `who`, pointing at `doc`) when prio > 0 and `loops` real-time
 * loops cover every online core: a woken or spinning loop keeps its core
 * from every normal process, a client under test on this host included.
 */
void sched_warn_rt_cores(const char *who, int prio, int loops, const char *doc);

#endif
