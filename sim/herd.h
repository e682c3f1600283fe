/*
 * herd.h -- the seed 001 model: P worker processes blocked on one listening
 * socket, served by ab(1) with `clients` concurrent connections and
 * `requests` requests in all, with or without a lock serialising accept
 * (uWSGI's --thunder-lock).  docs/sim-model.md, "Thundering herd".
 */
#ifndef MT_SIM_HERD_H
#define MT_SIM_HERD_H

#include <stdint.h>

#include "core/err.h"

#define HERD_PARAMS_N 16

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
    int64_t seed;
    uint8_t origin[HERD_PARAMS_N];
    char note[HERD_PARAMS_N][160];
};

struct herd_result {
    double total_s;   /* time for all requests */
    uint64_t wakeups; /* worker wake-ups */
    uint64_t futile;  /* wake-ups that found nothing to accept */
    uint64_t events;
};

void herd_params_default(struct herd_params *p);

/* Sets key (without the "herd." prefix) to value.  0 or MT_EUSAGE. */
int herd_params_set(struct herd_params *p, const char *key, const char *value,
                    int origin, const char *note, struct mt_err *err);

/* Number of parameters, their keys, and formatted values (for reports). */
size_t herd_params_count(void);
const char *herd_params_key(size_t i);
/* Meaning of parameter i, and its unit in *unit ("" when none; unit may
 * be NULL).  NULL past the end. */
const char *herd_params_help(size_t i, const char **unit);
void herd_params_format(const struct herd_params *p, size_t i, char *buf,
                        size_t cap);

/* Runs the model.  Deterministic in p.  0, -ENOMEM or MT_ELIMIT. */
int herd_run(const struct herd_params *p, struct herd_result *res,
             struct mt_err *err);

#endif
