/*
 * client.h -- benchmark client threads and connection pool of the
 * contention model (client.c).  Internal to sim/ (sim__ prefix).
 */
#ifndef MT_SIM_CLIENT_H
#define MT_SIM_CLIENT_H

#include <stdint.h>

struct sim_model;

/* Allocates threads, connections, the pool; schedules thread starts.
 * 0 or -ENOMEM. */
int sim__client_init(struct sim_model *m);

/* Thread t's CPU job with continuation `what` completed. */
void sim__client_job_done(struct sim_model *m, uint32_t t, uint32_t what);

/* Thread t starts (or ends a think pause): it wakes and takes the GIL. */
void sim__client_thread_start(struct sim_model *m, uint32_t t);

/* The reply of connection c is in the client's socket. */
void sim__client_reply(struct sim_model *m, uint32_t c);

#endif
