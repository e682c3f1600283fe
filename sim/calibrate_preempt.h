/*
 * calibrate_preempt.h -- host fact for the contention model's wake-up
 * preemption at a send (sim/client.c), measured by `mtrace calibrate`: how
 * often the process a send(2) wakes preempts the sender on its own core.
 */
#ifndef MT_SIM_CALIBRATE_PREEMPT_H
#define MT_SIM_CALIBRATE_PREEMPT_H

#include <stdio.h>

/* Where the sender and its peer may run. */
enum sim_cal_pin {
    SIM_CAL_PIN_NONE = 0, /* where the scheduler puts them (the workload's
                             case: nobody pins pymongo or the server) */
    SIM_CAL_PIN_SAME,     /* both pinned to one CPU: the wake-up lands on
                             the sender's CPU, only the preemption check
                             decides */
    SIM_CAL_PIN_SPLIT,    /* pinned to two different CPUs: a remote wake-up
                             (check: no preemption expected) */
};

/* What one run measured. */
struct sim_cal_preempt {
    int rounds;            /* sends measured */
    double p;              /* share of sends during which the sender was
                              involuntarily switched out (RUSAGE_THREAD
                              ru_nivcsw moved across send(2)) */
    double send_pre_us;    /* mean wall time of those sends (top 1 % out) */
    double send_no_us;     /* mean wall time of the other sends */
    double recv_block_pre; /* share of preempted sends whose recv(2) then
                              blocked (ru_nvcsw moved): the reply was not
                              there yet when the sender ran again */
    double recv_block_no;  /* same for the sends not preempted */
    double peer_cpu_us;    /* the peer's CPU per message (its rusage) */
};

/*
 * One thread loops `rounds` times over: a busy spin of gap_us (a Python
 * segment's stand-in: the peer is asleep meanwhile), send(2) of 100 bytes
 * on a loopback TCP connection (TCP_NODELAY) to a forked echo process,
 * recv(2) of its 100-byte reply.  Linux wakes the echo synchronously
 * (sock_def_readable -> wake_up_interruptible_sync_poll); the scheduler
 * may place it on the sender's CPU and preempt the sender
 * (kernel/sched/fair.c wake_affine_idle, select_idle_sibling, wake-up
 * preemption), which then runs again only when the echo has blocked.
 * pin chooses the CPUs (enum sim_cal_pin; SAME and SPLIT need 2 CPUs in
 * the affinity mask, else -1 with errno EINVAL).  Returns 0, or -1 (errno
 * set) when a socket, fork or affinity call failed; the child is reaped
 * before it returns.  Takes about rounds * (gap_us + 30 us).
 */
int sim_calibrate_preempt(int pin, int rounds, double gap_us,
                          struct sim_cal_preempt *out);

/* The gap (a Python segment's stand-in) and the sends per run that
 * `mtrace calibrate` uses. */
#define SIM_CAL_PREEMPT_GAP_US 100.0
#define SIM_CAL_PREEMPT_ROUNDS 2000

/*
 * Writes the host facts send_preempt_p (pre[SIM_CAL_PIN_NONE]) and
 * send_preempt_busy_p (pre[SIM_CAL_PIN_SAME]) as host-file lines with
 * their origin and method, and the SPLIT run as a comment.  A run whose
 * rounds is 0 (not measured) is written as a comment saying so.
 */
void sim_calibrate_preempt_print(FILE *out, const struct sim_cal_preempt *pre);

#endif
