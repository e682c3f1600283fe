/*
 * net.h -- transit, proxy (deadline / serial-go) and server of the
 * contention model (net.c).  Internal to sim/ (sim__ prefix).
 */
#ifndef MT_SIM_NET_H
#define MT_SIM_NET_H

#include <stdbool.h>
#include <stdint.h>

struct sim_model;
struct sim_ev;

/* The client's sendall on connection c completed: the request departs. */
void sim__net_send_request(struct sim_model *m, uint32_t c);

/*
 * Wake-up preemption at a send: thread t's sendall on connection c woke
 * the peer (the server, or the proxy when there is one) onto t's core.
 * The request is delivered now and the peer's CPU job starts at once on
 * the core t holds (no wake-up latency, ctx_cpu_us added: a sync wake-up
 * on the waker's CPU, then a switch); t resumes (client.c W_PREEMPT_BACK)
 * on that core when the job ends.  Returns false, doing nothing, when the
 * peer is busy or does not share the client's cores: then the caller
 * sends as usual (sim__net_send_request).
 */
bool sim__net_send_sync(struct sim_model *m, uint32_t c, uint32_t t);

/* Handles the proxy/server/transit event kinds of ev. */
void sim__net_event(struct sim_model *m, const struct sim_ev *ev);

/* A server or proxy entity's CPU job completed. */
void sim__net_job_done(struct sim_model *m, uint32_t e, uint32_t what);

#endif
