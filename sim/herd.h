/*
 * herd.h -- the seed 001 model: P worker processes blocked on one listening
 * socket, served by ab(1) with `clients` concurrent connections and
 * `requests` requests in all, with or without a lock serialising accept
 * (uWSGI's --thunder-lock).  docs/sim-model.md, "Thundering herd".
 * Its parameters are entries herd.* of the one table (params.h).
 */
#ifndef MT_SIM_HERD_H
#define MT_SIM_HERD_H

#include <stdint.h>

#include "core/err.h"

struct herd_params {
    int64_t procs;       /* worker processes */
    int64_t clients;     /* ab -c */
    int64_t requests;    /* ab -n */
    int64_t lock;        /* 1: thunder lock serialises accept */
    int64_t cores;       /* CPU cores (workers and ab share them) */
    double req_cpu_us;   /* worker CPU per request (accept..close) */
    double sleep_min_ms; /* app sleep in the main phase: uniform [min,max] */
    double sleep_max_ms;
    double cleanup_min_ms; /* sleep after the response: uniform [min,max] */
    double cleanup_max_ms;
    double futile_cpu_us; /* CPU of a woken worker that finds no connection */
    double wake_us;       /* wake-up latency */
    double ab_cpu_us;     /* ab CPU per request (one process) */
    double net_us;        /* loopback connect/transit */
    double walk_us; /* CPU per sleeping epoll waiter a new connection wakes,
                       paid by the connecting process (ab) */
    int64_t seed;   /* copied from the scenario's seed */
};

struct herd_result {
    double total_s;   /* time for all requests */
    uint64_t wakeups; /* worker wake-ups */
    uint64_t futile;  /* wake-ups that found nothing to accept */
    uint64_t events;
};

/* Runs the model.  Deterministic in p.  0, -ENOMEM or MT_ELIMIT. */
int herd_run(const struct herd_params *p, struct herd_result *res,
             struct mt_err *err);

#endif
