/*
 * net.h -- transit, proxy (deadline / serial-go) and server of the
 * contention model (net.c).  Internal to sim/ (sim__ prefix).
 */
#ifndef MT_SIM_NET_H
#define MT_SIM_NET_H

#include <stdint.h>

struct sim_model;
struct sim_ev;

/* The client's sendall on connection c completed: the request departs. */
void sim__net_send_request(struct sim_model *m, uint32_t c);

/* Handles the proxy/server/transit event kinds of ev. */
void sim__net_event(struct sim_model *m, const struct sim_ev *ev);

/* A server or proxy entity's CPU job completed. */
void sim__net_job_done(struct sim_model *m, uint32_t e, uint32_t what);

#endif
