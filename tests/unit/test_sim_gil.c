/*
 * test_sim_gil.c -- the GIL rules of sim/gil.c, one test per rule of
 * CPython's Python/ceval_gil.c (take_gil / drop_gil, FORCE_SWITCHING), on a
 * bare model: the tests call take/drop/timeout themselves and read the GIL
 * state, the wait queue and the scheduled events.
 *
 *   take-if-free        take_gil takes a free GIL at once, ahead of a
 *                       signalled waiter that has not run yet
 *   one signal per drop drop_gil's COND_SIGNAL wakes one waiter, the
 *                       oldest (glibc: signals go to the older group)
 *   futile wake-up      a woken waiter that finds the GIL taken waits again,
 *                       at the back, with a new interval and switch count
 *   switch_number       a wait that times out after another thread took the
 *                       GIL sets no drop request; one that times out with
 *                       no switch during the whole interval does
 *   timed out, GIL free the waiter takes it
 *   forced switch       a drop with the request pending waits on
 *                       switch_cond until another thread takes the GIL
 *   wake CPU placement  gil_wake_cpu_waiter: the taker pays (0) or the
 *                       futile waiter does, on its own core (1)
 *   mutex sections      gil_mutex_cs_us: take_gil's section holds
 *                       gil->mutex; a taker meanwhile blocks on it
 *   condvar quiesce     gil_cond_quiesce: a signal that switches glibc's
 *                       condvar groups waits, gil->mutex held, until the
 *                       old group's woken waiters have run
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "core/err.h"
#include "core/mem.h"
#include "sim/model.h"
#include "sim/params.h"

#include "sim_fixtures.h"

#define NTH 4

struct bare {
    struct sim_model m;
    struct sim_result res;
};

/* NTH threads, nothing scheduled; wake-ups and hand-offs without variation:
 * wake_us 10, gil_handoff_us 20, switch interval 5000 us. */
static void
bare_init(struct bare *b, const char *wake_cpu, const char *waiter_pays)
{
    memset(b, 0, sizeof(*b));
    sim_params_default(&b->m.p);
    set(&b->m.p, "threads", "4");
    set(&b->m.p, "wake_us", "10");
    set(&b->m.p, "wake_cv", "0");
    set(&b->m.p, "ctx_cpu_us", "0");
    set(&b->m.p, "gil_handoff_us", "20");
    set(&b->m.p, "cores", "4");
    set(&b->m.p, "gil_wake_cpu_us", wake_cpu);
    set(&b->m.p, "gil_wake_cpu_waiter", waiter_pays);
    b->m.res = &b->res;
    b->m.holding = -1;
    b->m.nth = NTH;
    b->m.nent = NTH;
    mt_rng_split(&b->m.rng_wake, 1, 2);
    assert_int_equal(sim_engine_init(&b->m.eng, 1024), 0);
    b->m.ent = mt_calloc(NTH, sizeof(*b->m.ent));
    b->m.runq = mt_calloc(NTH, sizeof(*b->m.runq));
    b->m.th = mt_calloc(NTH, sizeof(*b->m.th));
    assert_non_null(b->m.ent);
    assert_non_null(b->m.runq);
    assert_non_null(b->m.th);
    for (size_t e = 0; e < NTH; e++)
        b->m.ent[e].shared = true;
    assert_int_equal(sim__gil_init(&b->m), 0);
}

static void
bare_free(struct bare *b)
{
    sim_engine_free(&b->m.eng);
    mt_free(b->m.ent);
    mt_free(b->m.runq);
    mt_free(b->m.th);
    mt_free(b->m.gil.q);
    mt_free(b->m.gil.mq);
}

/* Pops events until one of kind for entity id is due; returns its time. */
static uint64_t
next_event(struct bare *b, uint32_t kind, uint32_t id, struct sim_ev *out)
{
    struct sim_ev ev;

    while (sim_engine_pop(&b->m.eng, &ev)) {
        if (ev.kind == kind && ev.id == id) {
            if (out)
                *out = ev;
            return ev.t_ns;
        }
    }
    fail_msg("no event of kind %u for %u", kind, id);
    return 0;
}

/* The GIL's wait queue is exactly q[0..n). */
static void
assert_queue(const struct bare *b, const int32_t *q, size_t n)
{
    assert_int_equal(b->m.gil.qn, n);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(b->m.gil.q[i], q[i]);
}

/* take-if-free, one signal per drop (the oldest waiter), futile wake-up. */
static void
test_sim_gil_take_if_free_and_one_signal(void **state)
{
    struct bare b;
    struct sim_ev ev;

    bare_init(&b, "0", "0");
    assert_true(sim__gil_take(&b.m, 0));
    assert_false(sim__gil_take(&b.m, 1)); /* waits */
    assert_false(sim__gil_take(&b.m, 2));
    assert_queue(&b, (const int32_t[]){1, 2}, 2);
    assert_int_equal(b.res.client_blocks, 2);

    /* thread 0 drops for a syscall: one waiter (the oldest) is signalled */
    assert_true(sim__gil_drop(&b.m, 0, false));
    assert_false(b.m.gil.locked);
    assert_queue(&b, (const int32_t[]){2}, 1);
    assert_int_equal(b.res.gil_wakes, 1);
    assert_int_equal(b.m.ent[1].state, ES_WAKING);
    /* its wake-up is gil_handoff_us away */
    assert_int_equal(next_event(&b, SIM_EV_WAKE, 1, &ev), 20000);

    /* thread 0 returns from the syscall first: takes the free GIL, ahead
     * of the signalled thread 1 (no switch: it was the last holder) */
    b.m.ent[1].state = ES_IDLE; /* the wake-up event has been consumed */
    assert_true(sim__gil_take(&b.m, 0));
    assert_int_equal(b.m.gil.switch_number, 1);

    /* thread 1 runs, finds the GIL taken: futile, back of the queue */
    assert_false(sim__gil_recheck(&b.m, 1));
    assert_int_equal(b.res.gil_futile, 1);
    assert_queue(&b, (const int32_t[]){2, 1}, 2);
    assert_int_equal(b.m.th[1].saved_switch, 1);

    /* next drop signals thread 2 (now the oldest), not thread 1 */
    assert_true(sim__gil_drop(&b.m, 0, false));
    assert_queue(&b, (const int32_t[]){1}, 1);
    assert_int_equal(b.m.ent[2].state, ES_WAKING);
    assert_int_equal(b.m.ent[1].state, ES_IDLE);
    b.m.ent[2].state = ES_IDLE;
    assert_true(sim__gil_recheck(&b.m, 2)); /* GIL free: takes it */
    assert_int_equal(b.m.gil.holder, 2);
    assert_int_equal(b.m.gil.switch_number, 2);
    assert_int_equal(b.res.gil_wakes, 2);
    bare_free(&b);
}

/* The interval restarts at every wait: thread 1's first wait (at 0) is
 * superseded by its re-wait after a futile wake-up at 20 us, whose timeout
 * is due at 20 + 5000 us. */
static void
test_sim_gil_interval_restarts_per_wait(void **state)
{
    struct bare b;
    struct sim_ev ev;

    bare_init(&b, "0", "0");
    assert_true(sim__gil_take(&b.m, 0));
    assert_false(sim__gil_take(&b.m, 1));
    assert_true(sim__gil_drop(&b.m, 0, false));
    assert_true(sim__gil_take(&b.m, 0)); /* cuts ahead */
    assert_int_equal(next_event(&b, SIM_EV_WAKE, 1, NULL), 20000);
    b.m.ent[1].state = ES_IDLE;
    assert_false(sim__gil_recheck(&b.m, 1));
    /* the first wait's timeout (due at 5 ms) is stale: its generation is
     * old and sim__gil_timeout ignores it */
    uint64_t t = next_event(&b, SIM_EV_GIL_TIMEOUT, 1, &ev);
    assert_int_equal(t, 5000000);
    sim__gil_timeout(&b.m, 1, ev.gen);
    assert_int_equal(b.res.gil_drop_requests, 0);
    assert_true(b.m.th[1].in_cond);
    t = next_event(&b, SIM_EV_GIL_TIMEOUT, 1, &ev);
    assert_int_equal(t, 5020000);
    sim__gil_timeout(&b.m, 1, ev.gen); /* no switch since 20 us: request */
    assert_int_equal(b.res.gil_drop_requests, 1);
    assert_true(b.m.gil.drop_req);
    bare_free(&b);
}

/* switch_number: a timeout sets the drop request only when no other thread
 * took the GIL during the whole interval. */
static void
test_sim_gil_drop_request_needs_no_switch(void **state)
{
    struct bare b;
    struct sim_ev ev;

    bare_init(&b, "0", "0");
    assert_true(sim__gil_take(&b.m, 0));
    assert_false(sim__gil_take(&b.m, 1)); /* waits with switch_number 1 */
    assert_false(sim__gil_take(&b.m, 2));
    /* thread 0 drops (thread 1 signalled); thread 3 returns from a syscall
     * and takes the free GIL: a switch during thread 2's interval */
    assert_true(sim__gil_drop(&b.m, 0, false));
    assert_true(sim__gil_take(&b.m, 3));
    assert_int_equal(b.m.gil.switch_number, 2);
    uint64_t t = next_event(&b, SIM_EV_GIL_TIMEOUT, 2, &ev);
    assert_int_equal(t, 5000000);
    sim__gil_timeout(&b.m, 2, ev.gen);
    assert_int_equal(b.res.gil_drop_requests, 0); /* a switch happened */
    assert_false(b.m.gil.drop_req);
    assert_int_equal(b.m.th[2].saved_switch, 2); /* waits again */
    assert_true(b.m.th[2].in_cond);
    /* the next interval passes with thread 3 holding throughout */
    t = next_event(&b, SIM_EV_GIL_TIMEOUT, 2, &ev);
    assert_int_equal(t, 10000000);
    sim__gil_timeout(&b.m, 2, ev.gen);
    assert_int_equal(b.res.gil_drop_requests, 1);
    assert_true(b.m.gil.drop_req);

    /* forced switch: thread 3 drops with the request pending and waits on
     * switch_cond until another thread takes the GIL */
    assert_false(sim__gil_drop(&b.m, 3, false));
    assert_int_equal(b.m.gil.switch_waiter, 3);
    assert_int_equal(b.res.gil_forced, 1);
    assert_true(sim__gil_take(&b.m, 1)); /* another thread: switch_cond */
    assert_int_equal(b.m.gil.switch_waiter, -1);
    assert_false(b.m.gil.drop_req); /* take_gil resets the request */
    assert_int_equal(b.m.ent[3].state, ES_WAKING);
    bare_free(&b);
}

/* A wait that times out with the GIL free takes it (after a wake-up). */
static void
test_sim_gil_timeout_with_gil_free(void **state)
{
    struct bare b;
    struct sim_ev ev;

    bare_init(&b, "0", "0");
    assert_true(sim__gil_take(&b.m, 0));
    assert_false(sim__gil_take(&b.m, 1));
    assert_false(sim__gil_take(&b.m, 2));
    assert_true(sim__gil_drop(&b.m, 0, false)); /* signals 1; 2 still waits */
    uint64_t t = next_event(&b, SIM_EV_GIL_TIMEOUT, 2, &ev);
    sim__gil_timeout(&b.m, 2, ev.gen); /* GIL still free at 5 ms */
    assert_int_equal(t, 5000000);
    assert_false(b.m.th[2].in_cond);
    assert_int_equal(b.m.ent[2].state, ES_WAKING);
    assert_int_equal(b.res.gil_wakes, 2);
    assert_int_equal(b.res.gil_drop_requests, 0);
    bare_free(&b);
}

/* gil_wake_cpu_waiter = 0: each woken waiter adds gil_wake_cpu_us to a
 * debt the next taker pays (sim__gil_take_cost).  = 1: nothing is charged
 * to a taker; a futile waiter runs a gil_wake_cpu_us job on its core
 * before waiting again, and takes the GIL if it was dropped meanwhile. */
static void
test_sim_gil_wake_cpu_placement(void **state)
{
    struct bare b;

    bare_init(&b, "30", "0");
    assert_true(sim__gil_take(&b.m, 0));
    assert_false(sim__gil_take(&b.m, 1));
    assert_true(sim__gil_drop(&b.m, 0, false));
    assert_true(sim__gil_take(&b.m, 0));
    assert_int_equal(sim__gil_take_cost(&b.m), 30000);
    assert_int_equal(sim__gil_take_cost(&b.m), 0); /* paid once */
    bare_free(&b);

    bare_init(&b, "30", "1");
    assert_true(sim__gil_take(&b.m, 0));
    assert_false(sim__gil_take(&b.m, 1));
    assert_true(sim__gil_drop(&b.m, 0, false));
    assert_true(sim__gil_take(&b.m, 0));
    assert_int_equal(sim__gil_take_cost(&b.m), 0);
    b.m.ent[1].state = ES_IDLE; /* its wake-up event consumed */
    assert_false(sim__gil_recheck(&b.m, 1));
    assert_int_equal(b.res.gil_futile, 1);
    assert_false(b.m.th[1].in_cond); /* not yet waiting: paying its CPU */
    assert_int_equal(b.m.ent[1].state, ES_RUNNING);
    assert_int_equal(b.m.ent[1].what, W_GIL_REWAIT);
    assert_int_equal(b.m.ent[1].dur_ns, 30000);
    b.m.ent[1].state = ES_IDLE;
    assert_false(sim__gil_rewait_done(&b.m, 1)); /* still held: waits */
    assert_queue(&b, (const int32_t[]){1}, 1);
    /* the same with the GIL dropped during the futile waiter's CPU */
    assert_true(sim__gil_drop(&b.m, 0, false)); /* signals 1 */
    assert_true(sim__gil_take(&b.m, 0));
    b.m.ent[1].state = ES_IDLE;
    assert_false(sim__gil_recheck(&b.m, 1));
    b.m.ent[1].state = ES_IDLE;
    b.m.busy = 0;
    assert_true(sim__gil_drop(&b.m, 0, false)); /* nobody waits */
    assert_true(sim__gil_rewait_done(&b.m, 1)); /* takes the free GIL */
    assert_int_equal(b.m.gil.holder, 1);
    bare_free(&b);
}

/* gil_mutex_cs_us 2 (gil_mutex_signal_us 4 turns gil->mutex on): thread 0
 * takes the GIL at 0 and holds the mutex until 2 us; thread 1 reaches
 * take_gil at 0: blocks on the mutex (not on the cond), is woken at the
 * window's end + wake_us = 12 us, finds the GIL locked and waits on the
 * cond.  With the sections off it waits on the cond at once. */
static void
test_sim_gil_mutex_sections(void **state)
{
    struct bare b;

    bare_init(&b, "0", "0");
    set(&b.m.p, "gil_mutex_signal_us", "4");
    set(&b.m.p, "gil_mutex_cs_us", "2");
    assert_true(sim__gil_take(&b.m, 0));
    assert_false(sim__gil_take(&b.m, 1));
    assert_int_equal(b.res.gil_mutex_blocks, 1);
    assert_int_equal(b.m.gil.qn, 0);
    assert_int_equal(next_event(&b, SIM_EV_GIL_MUTEX, 0, NULL), 2000);
    sim__gil_mutex_free(&b.m);
    assert_int_equal(b.m.ent[1].state, ES_WAKING);
    assert_int_equal(next_event(&b, SIM_EV_WAKE, 1, NULL), 12000);
    b.m.ent[1].state = ES_IDLE;
    assert_false(sim__gil_mutex_woken(&b.m, 1));
    assert_queue(&b, (const int32_t[]){1}, 1);
    assert_int_equal(b.res.gil_mutex_blocks, 1);
    bare_free(&b);

    bare_init(&b, "0", "0");
    set(&b.m.p, "gil_mutex_signal_us", "4");
    assert_true(sim__gil_take(&b.m, 0));
    assert_false(sim__gil_take(&b.m, 1));
    assert_int_equal(b.res.gil_mutex_blocks, 0);
    assert_queue(&b, (const int32_t[]){1}, 1);
    bare_free(&b);
}

/*
 * gil_cond_quiesce, hold 4 us, wake_us 10, all at time 0.  Threads 1, 2
 * wait; thread 0 drops: the first signal switches groups (G1 = {1, 2}, no
 * woken waiter yet: no wait) and wakes 1; it retakes the GIL (take-if-free)
 * and drops again: 2 is signalled (G1 now exhausted).  Thread 3 waits (in
 * G2).  The third drop must switch groups while 1 and 2 have not run: the
 * dropper blocks, gil->mutex held.  1 runs: blocks on the mutex; 2 runs,
 * the last reference: the dropper is woken (10 us), signals 3 (which wakes
 * 10 us after that) and holds the mutex 4 us past its wake-up; 2 blocks on
 * the mutex too.  Thread 3 comes after the first window (4 us), so the
 * times are 4 us later: 14, 18, 24.
 */
static void
test_sim_gil_cond_quiesce(void **state)
{
    struct bare b;

    bare_init(&b, "0", "0");
    set(&b.m.p, "gil_mutex_signal_us", "4");
    set(&b.m.p, "gil_cond_quiesce", "1");
    assert_true(sim__gil_take(&b.m, 0));
    assert_false(sim__gil_take(&b.m, 1));
    assert_false(sim__gil_take(&b.m, 2));
    assert_true(sim__gil_drop(&b.m, 0, false));
    assert_false(b.m.th[0].drop_quiesce);
    assert_int_equal(b.m.th[0].drop_cpu_ns, 4000);
    assert_int_equal(b.m.gil.g1_left, 1);
    assert_true(sim__gil_take(&b.m, 0)); /* its own window: not blocked */
    assert_true(sim__gil_drop(&b.m, 0, false));
    assert_int_equal(b.m.gil.g1_left, 0);
    assert_int_equal(b.m.gil.refs_n, 2);
    assert_int_equal(b.res.gil_quiesce, 0);
    assert_true(sim__gil_take(&b.m, 0));
    /* the signals' window ends at 4 us; 3 arrives after it */
    assert_int_equal(next_event(&b, SIM_EV_GIL_MUTEX, 0, NULL), 4000);
    assert_false(sim__gil_take(&b.m, 3));
    assert_int_equal(b.res.gil_mutex_blocks, 0);
    assert_true(sim__gil_drop(&b.m, 0, false));
    assert_true(b.m.th[0].drop_quiesce);
    assert_int_equal(b.res.gil_quiesce, 1);
    assert_queue(&b, (const int32_t[]){3}, 1); /* not signalled yet */
    b.m.ent[1].state = ES_IDLE;
    b.m.ent[2].state = ES_IDLE;
    assert_false(sim__gil_recheck(&b.m, 1)); /* re-lock: mutex held */
    assert_int_equal(b.res.gil_mutex_blocks, 1);
    assert_true(b.m.th[0].drop_quiesce);
    assert_false(sim__gil_recheck(&b.m, 2)); /* ends the quiesce */
    assert_false(b.m.th[0].drop_quiesce);
    assert_int_equal(b.res.gil_mutex_blocks, 2);
    assert_queue(&b, NULL, 0);
    assert_int_equal(b.m.ent[3].state, ES_WAKING);
    assert_int_equal(next_event(&b, SIM_EV_WAKE, 0, NULL), 14000);
    assert_int_equal(next_event(&b, SIM_EV_GIL_MUTEX, 0, NULL), 18000);
    assert_int_equal(next_event(&b, SIM_EV_WAKE, 3, NULL), 24000);
    bare_free(&b);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sim_gil_take_if_free_and_one_signal),
        cmocka_unit_test(test_sim_gil_interval_restarts_per_wait),
        cmocka_unit_test(test_sim_gil_drop_request_needs_no_switch),
        cmocka_unit_test(test_sim_gil_timeout_with_gil_free),
        cmocka_unit_test(test_sim_gil_wake_cpu_placement),
        cmocka_unit_test(test_sim_gil_mutex_sections),
        cmocka_unit_test(test_sim_gil_cond_quiesce),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
