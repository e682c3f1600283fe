/*
 * calibrate_herd.h -- host fact for the herd model (sim/herd.c), measured
 * by `mtrace calibrate`: the CPU a new connection costs the connecting
 * process per process sleeping in epoll_wait on the listening socket.
 */
#ifndef MT_SIM_CALIBRATE_HERD_H
#define MT_SIM_CALIBRATE_HERD_H

/*
 * The wake-up walk: P forked processes each wait in epoll_wait on their own
 * epoll instance watching one loopback listening socket (as uWSGI workers
 * without --thunder-lock do); the parent connects and closes `rounds`
 * times, 0.5 ms apart, and measures its own CPU per connect
 * (CLOCK_PROCESS_CPUTIME_ID: on loopback the handshake completes in softirq
 * inside connect(), so the listening socket's wait-queue walk and the
 * wake-ups are charged to it).  *walk_ns = (CPU per connect with 256
 * waiters - with 1) / 255; *base_ns = CPU per connect with 1 waiter.
 * Returns 0, or -1 (errno set) when a socket, fork or epoll call failed;
 * every child is killed and reaped before it returns.  Takes ~1.5 s.
 */
int sim_calibrate_walk(double *walk_ns, double *base_ns);

#endif
