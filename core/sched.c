/*
 * sched.c -- SCHED_FIFO for event-loop threads; see sched.h.
 */
#include "core/sched.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"

/*
 * Puts the calling thread under SCHED_FIFO at prio; see sched.h.
 */
int
sched_set_realtime(int prio, struct mt_err *err)
{
    struct sched_param sp;
    int rc;

    if (prio == 0)
        return MT_OK;
    if (prio < 1 || prio > SCHED_RT_PRIO_MAX)
        return mt_err_set(err, MT_EUSAGE, 0,
                          "real-time priority %d out of range 1..%d", prio,
                          SCHED_RT_PRIO_MAX);
    memset(&sp, 0, sizeof(sp));
    sp.sched_priority = prio;
    rc = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
    if (rc != 0)
        return mt_err_set(err, -rc, 0,
                          "cannot use SCHED_FIFO priority %d: %s%s", prio,
                          strerror(rc),
                          rc == EPERM ? " (needs CAP_SYS_NICE or "
                                        "RLIMIT_RTPRIO, see ulimit -r)"
                                      : "");
    return MT_OK;
}

/*
 * Puts the calling thread back under SCHED_OTHER; see sched.h.
 */
int
sched_set_normal(void)
{
    struct sched_param sp;
    int rc;

    if (!sched_is_realtime())
        return MT_OK;
    memset(&sp, 0, sizeof(sp));
    rc = pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp);
    return rc == 0 ? MT_OK : -rc;
}

/*
 * Puts the calling thread under SCHED_BATCH; see sched.h.
 */
int
sched_set_batch(void)
{
    struct sched_param sp;
    int rc;

    memset(&sp, 0, sizeof(sp));
    rc = pthread_setschedparam(pthread_self(), SCHED_BATCH, &sp);
    return rc == 0 ? MT_OK : -rc;
}

/*
 * Reports the calling thread's scheduling policy; see sched.h.
 */
int
sched_policy(void)
{
    struct sched_param sp;
    int policy;

    if (pthread_getschedparam(pthread_self(), &policy, &sp) != 0)
        return -1;
    return policy;
}

/*
 * Reports whether the calling thread runs under a real-time policy.
 */
int
sched_is_realtime(void)
{
    struct sched_param sp;
    int policy;

    if (pthread_getschedparam(pthread_self(), &policy, &sp) != 0)
        return 0;
    return policy == SCHED_FIFO || policy == SCHED_RR;
}

/*
 * Warns when real-time loops cover every core; see sched.h.
 */
void
sched_warn_rt_cores(const char *who, int prio, int loops, const char *doc)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

    if (prio > 0 && ncpu > 0 && loops >= ncpu)
        mt_warn("%s: --rt-prio %d with %d real-time loops on %ld cores: a "
                "woken or spinning loop keeps its core from every normal "
                "process, a client on this host included; --threads %ld "
                "leaves one (%s)",
                who, prio, loops, ncpu, ncpu > 1 ? ncpu - 1 : 1, doc);
}
