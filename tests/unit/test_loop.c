/*
 * test_loop.c -- core/loop.c: timer heap order and ties, stop/restart,
 * deadline overflow, loop_stop from another thread, allocation failure
 * (the fd tests are in test_loop_fd.c); spin: order and
 * never early, the adaptive window's bound, little CPU when no timer is
 * near, timers run between the fd callbacks of a tick; batch positions,
 * and timers falling due during a batch join it in precision mode.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/err.h"
#include "core/loop.h"
#include "core/mem.h"

struct fired {
    int order[64];
    size_t n;
};

struct tag {
    struct fired *log;
    int id;
};

static void
on_timer_log(struct loop *l, struct loop_timer *t, void *arg)
{
    struct tag *tg = arg;
    assert_false(loop_timer_active(t)); /* removed before the callback */
    assert_true(tg->log->n < 64);
    tg->log->order[tg->log->n++] = tg->id;
}

static struct loop *
manual_loop(struct mt_clock *clk, uint64_t *now)
{
    struct mt_err err = {0};
    struct loop *l;

    mt_clock_manual(clk, now);
    l = loop_new(clk, 64, &err);
    assert_non_null(l);
    return l;
}

static void
test_loop_timer_order_and_ties(void **state)
{
    uint64_t now = 1000;
    struct mt_clock clk;
    struct loop *l = manual_loop(&clk, &now);
    struct fired log = {{0}, 0};
    struct loop_timer t[6];
    struct tag tags[6];
    /* deadlines: id -> ns; ids 1,2,4 tie at 1500 and must fire 1,2,4 */
    static const uint64_t dl[6] = {1700, 1500, 1500, 1200, 1500, 3000};

    for (int i = 0; i < 6; i++) {
        tags[i].log = &log;
        tags[i].id = i;
        loop_timer_init(&t[i]);
        assert_false(loop_timer_active(&t[i]));
        loop_timer_start(l, &t[i], dl[i], on_timer_log, &tags[i]);
        assert_true(loop_timer_active(&t[i]));
    }
    now = 1199;
    assert_int_equal(loop_run_once(l, 0), 0);
    assert_int_equal(log.n, 0); /* nothing due yet */
    now = 2000;
    assert_int_equal(loop_run_once(l, 0), 0);
    assert_int_equal(log.n, 5);
    assert_int_equal(log.order[0], 3); /* 1200 */
    assert_int_equal(log.order[1], 1); /* 1500, started first */
    assert_int_equal(log.order[2], 2); /* 1500 */
    assert_int_equal(log.order[3], 4); /* 1500, started last */
    assert_int_equal(log.order[4], 0); /* 1700 */
    assert_true(loop_timer_active(&t[5]));
    assert_int_equal(loop_now_ns(l), 2000);
    loop_free(l);
    assert_false(loop_timer_active(&t[5])); /* loop_free unlinks */
}

static void
test_loop_timer_heap_many(void **state)
{
    /* 500 timers with pseudo-random deadlines fire sorted by (dl, seq). */
    uint64_t now = 0;
    struct mt_clock clk;
    struct loop *l = manual_loop(&clk, &now);
    static struct loop_timer t[500];
    static struct tag tags[500];
    struct fired log = {{0}, 0};
    uint64_t x = 12345;

    for (int i = 0; i < 500; i++) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        tags[i].log = &log;
        tags[i].id = i;
        loop_timer_init(&t[i]);
        loop_timer_start(l, &t[i], 1 + (x >> 58), on_timer_log, &tags[i]);
    }
    for (int i = 0; i < 500; i += 3) /* stop a third of them */
        loop_timer_stop(l, &t[i]);
    for (now = 1; now <= 64; now++) {
        log.n = 0;
        assert_int_equal(loop_run_once(l, 0), 0);
        for (size_t k = 0; k < log.n; k++) {
            assert_int_equal(t[log.order[k]].deadline_ns, now);
            assert_true(log.order[k] % 3 != 0);
            if (k > 0)
                assert_true(log.order[k] > log.order[k - 1]); /* FIFO */
        }
    }
    for (int i = 0; i < 500; i++)
        assert_false(loop_timer_active(&t[i]));
    loop_free(l);
}

struct rearm {
    int count;
};

static void
on_timer_rearm(struct loop *l, struct loop_timer *t, void *arg)
{
    struct rearm *r = arg;
    r->count++;
    /* re-arm at "now": must wait for the next tick, not loop forever */
    loop_timer_start(l, t, loop_now_ns(l), on_timer_rearm, r);
}

static void
test_loop_timer_stop_restart(void **state)
{
    uint64_t now = 10;
    struct mt_clock clk;
    struct loop *l = manual_loop(&clk, &now);
    struct fired log = {{0}, 0};
    struct tag a = {&log, 1}, b = {&log, 2};
    struct loop_timer ta, tb, tr;
    struct rearm r = {0};

    loop_timer_init(&ta);
    loop_timer_init(&tb);
    loop_timer_start(l, &ta, 20, on_timer_log, &a);
    loop_timer_start(l, &tb, 30, on_timer_log, &b);
    loop_timer_stop(l, &ta);
    loop_timer_stop(l, &ta); /* twice is harmless */
    assert_false(loop_timer_active(&ta));
    loop_timer_start(l, &tb, 15, on_timer_log, &b); /* restart earlier */
    now = 25;
    assert_int_equal(loop_run_once(l, 0), 0);
    assert_int_equal(log.n, 1);
    assert_int_equal(log.order[0], 2);
    now = 100;
    assert_int_equal(loop_run_once(l, 0), 0);
    assert_int_equal(log.n, 1); /* ta stopped, tb fired once */

    loop_timer_init(&tr);
    loop_timer_start(l, &tr, 100, on_timer_rearm, &r);
    assert_int_equal(loop_run_once(l, 0), 0);
    assert_int_equal(r.count, 1);
    assert_int_equal(loop_run_once(l, 0), 0);
    assert_int_equal(r.count, 2);
    loop_timer_stop(l, &tr);
    loop_free(l);
}

static void
test_loop_deadline_overflow_clamps(void **state)
{
    uint64_t now = UINT64_MAX - 10;
    struct mt_clock clk;
    struct loop *l = manual_loop(&clk, &now);
    struct fired log = {{0}, 0};
    struct tag a = {&log, 1};
    struct loop_timer t;

    assert_int_equal(loop_deadline_after(l, 5), UINT64_MAX - 5);
    assert_int_equal(loop_deadline_after(l, 11), UINT64_MAX);
    assert_int_equal(loop_deadline_after(l, UINT64_MAX), UINT64_MAX);
    loop_timer_init(&t);
    loop_timer_start(l, &t, loop_deadline_after(l, 1000), on_timer_log, &a);
    now = UINT64_MAX;
    assert_int_equal(loop_run_once(l, 0), 0);
    assert_int_equal(log.n, 0); /* a clamped deadline never fires */
    assert_true(loop_timer_active(&t));
    loop_free(l);
}

static void
on_timer_count(struct loop *l, struct loop_timer *t, void *arg)
{
    (*(int *)arg)++;
}

static void
test_loop_real_timer_not_early(void **state)
{
    struct mt_err err = {0};
    struct loop *l = loop_new(NULL, 16, &err);
    struct loop_timer t;
    uint64_t start, deadline;
    int fired = 0;

    assert_non_null(l);
    loop_timer_init(&t);
    start = loop_update_time(l);
    deadline = loop_deadline_after(l, 2000000); /* 2 ms */
    loop_timer_start(l, &t, deadline, on_timer_count, &fired);
    while (!fired)
        assert_int_equal(loop_run_once(l, UINT64_MAX), 0);
    assert_true(mt_now_ns() >= deadline); /* direction only: never early */
    assert_true(loop_now_ns(l) >= start + 2000000);
    loop_free(l);
}

static void
on_hook(struct loop *l, void *arg)
{
    (*(int *)arg)++;
}

static void *
stopper(void *arg)
{
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    loop_stop(arg);
    return NULL;
}

static void
test_loop_stop_from_thread_and_restart(void **state)
{
    struct mt_err err = {0};
    struct loop *l = loop_new(NULL, 16, &err);
    pthread_t th;
    int hooks = 0;

    assert_non_null(l);
    loop_set_before_sleep(l, on_hook, &hooks);
    for (int round = 0; round < 2; round++) {
        int before = hooks;
        assert_int_equal(pthread_create(&th, NULL, stopper, l), 0);
        assert_int_equal(loop_run(l), 0); /* blocks: nothing else to do */
        assert_int_equal(pthread_join(th, NULL), 0);
        assert_true(hooks > before);
    }
    loop_stop(l); /* stop before run: run returns after one tick */
    assert_int_equal(loop_run(l), 0);
    loop_wake(l);
    loop_wake(l);
    assert_int_equal(loop_run_once(l, UINT64_MAX), 0); /* wake consumed */
    loop_free(l);
}

static void
on_hook_poll_next(struct loop *l, void *arg)
{
    int *left = arg;
    if (*left > 0) {
        (*left)--;
        loop_poll_next(l);
    }
}

/* loop_poll_next from the before-sleep hook: the next wait only polls
 * (nothing else would wake it: no fd, timer or wake; alarm() fails the
 * test instead of hanging), once per call. */
static void
test_loop_poll_next(void **state)
{
    struct mt_err err = {0};
    struct loop *l = loop_new(NULL, 16, &err);
    int left = 3;

    (void)state;
    assert_non_null(l);
    loop_set_before_sleep(l, on_hook_poll_next, &left);
    alarm(10);
    for (int i = 0; i < 3; i++)
        assert_int_equal(loop_run_once(l, UINT64_MAX), 0);
    alarm(0);
    assert_int_equal(left, 0);
    /* consumed: the next wait blocks for its timeout (1 ms here) */
    assert_int_equal(loop_run_once(l, 1000000u), 0);
    loop_free(l);
}

struct wake_stress {
    struct loop *l;
    atomic_int pending;
    atomic_int consumed;
    int per_thread;
};

static void *
waker(void *arg)
{
    struct wake_stress *w = arg;
    for (int i = 0; i < w->per_thread; i++) {
        atomic_fetch_add(&w->pending, 1);
        loop_wake(w->l);
    }
    return NULL;
}

static void
on_hook_consume(struct loop *l, void *arg)
{
    struct wake_stress *w = arg;
    int n = atomic_fetch_add(&w->consumed, atomic_exchange(&w->pending, 0));
    (void)n;
    if (atomic_load(&w->consumed) == 2 * w->per_thread)
        loop_stop(l); /* all seen: loop_run returns */
}

static void
test_loop_wake_never_lost(void **state)
{
    /* Two threads wake the loop 100k times each; every wake is seen by
     * the hook, and afterwards a wake (loop_stop) still interrupts a
     * blocked wait.  A lost wake hangs: SIGALRM fails the test instead. */
    struct mt_err err = {0};
    struct wake_stress w;
    pthread_t th[2];

    w.l = loop_new(NULL, 16, &err);
    assert_non_null(w.l);
    atomic_init(&w.pending, 0);
    atomic_init(&w.consumed, 0);
    w.per_thread = 100000;
    loop_set_before_sleep(w.l, on_hook_consume, &w);
    alarm(30);
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&th[i], NULL, waker, &w), 0);
    assert_int_equal(loop_run(w.l), 0); /* returns once all are seen */
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    assert_int_equal(atomic_load(&w.consumed), 2 * w.per_thread);
    loop_set_before_sleep(w.l, NULL, NULL);
    for (int round = 0; round < 3; round++) {
        assert_int_equal(pthread_create(&th[0], NULL, stopper, w.l), 0);
        assert_int_equal(loop_run(w.l), 0);
        assert_int_equal(pthread_join(th[0], NULL), 0);
    }
    alarm(0);
    loop_free(w.l);
}

static void
test_loop_new_alloc_failure(void **state)
{
    struct mt_err err = {0};
    struct loop *l;

    for (uint64_t nth = 1; nth <= 2; nth++) {
        mt_mem_fail_after(nth);
        l = loop_new(NULL, 32, &err);
        mt_mem_fail_after(0);
        assert_null(l);
        assert_int_equal(err.code, -ENOMEM);
    }
    l = loop_new(NULL, 1 << 30, &err);
    assert_null(l);
    assert_int_equal(err.code, MT_ELIMIT);
    loop_free(NULL);
}

/* ---- spin (precision mode) ---- */

static uint64_t
thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct spin_log {
    struct loop_timer t[8];
    uint64_t deadline[8];
    int order[8];
    int n;
    int early; /* callbacks that ran before their deadline */
};

static void
on_spin_timer(struct loop *l, struct loop_timer *t, void *arg)
{
    struct spin_log *s = arg;
    int id = (int)(t - s->t);

    if (mt_now_ns() < s->deadline[id])
        s->early++;
    s->order[s->n++] = id;
}

/* With a fixed spin wider than every deadline, timers still fire in
 * (deadline, start order) order and never early. */
static void
test_loop_spin_fixed_order_not_early(void **state)
{
    static const uint64_t off_us[8] = {900, 300, 300, 600, 100, 900, 300, 50};
    static const int want[8] = {7, 4, 1, 2, 6, 3, 0, 5};
    struct mt_err err = {0};
    struct loop *l = loop_new(NULL, 16, &err);
    struct spin_log s = {0};
    struct loop_wake_stats ws;
    uint64_t now;

    assert_non_null(l);
    loop_set_timer_spin(l, 2000000); /* 2 ms: the whole wait is spun */
    assert_int_equal(loop_timer_spin_ns(l), 2000000);
    now = loop_update_time(l);
    for (int i = 0; i < 8; i++) {
        loop_timer_init(&s.t[i]);
        s.deadline[i] = now + off_us[i] * 1000;
        loop_timer_start(l, &s.t[i], s.deadline[i], on_spin_timer, &s);
    }
    while (s.n < 8)
        assert_int_equal(loop_run_once(l, UINT64_MAX), 0);
    assert_int_equal(s.early, 0);
    loop_wake_stats_get(l, &ws);
    assert_true(ws.spins > 0); /* polled: every deadline was in the window */
    for (int i = 0; i < 8; i++)
        assert_int_equal(s.order[i], want[i]);
    loop_free(l);
}

struct chain {
    struct loop_timer t;
    uint64_t delay_ns, deadline;
    int left, early;
};

static void
on_chain(struct loop *l, struct loop_timer *t, void *arg)
{
    struct chain *c = arg;
    uint64_t now = loop_update_time(l);

    if (now < c->deadline)
        c->early++;
    if (--c->left > 0) {
        c->deadline = now + c->delay_ns;
        loop_timer_start(l, t, c->deadline, on_chain, c);
    }
}

static void
run_chain(struct loop *l, struct chain *c, int n, uint64_t delay_ns)
{
    memset(c, 0, sizeof(*c));
    c->delay_ns = delay_ns;
    c->left = n;
    loop_timer_init(&c->t);
    c->deadline = loop_update_time(l) + delay_ns;
    loop_timer_start(l, &c->t, c->deadline, on_chain, c);
    while (c->left > 0)
        assert_int_equal(loop_run_once(l, UINT64_MAX), 0);
}

/* The adaptive window starts at its bound, then follows the measured
 * wake-ups and never exceeds the bound. */
static void
test_loop_spin_auto_bounded(void **state)
{
    struct mt_err err = {0};
    struct loop *l = loop_new(NULL, 16, &err);
    struct loop_wake_stats ws;
    struct chain c;

    assert_non_null(l);
    loop_set_timer_spin_auto(l, 150000);
    assert_int_equal(loop_timer_spin_ns(l), 150000); /* before any sample */
    run_chain(l, &c, LOOP_WAKE_WARMUP + 8, 400000);  /* 40 x 0.4 ms */
    assert_int_equal(c.early, 0);
    loop_wake_stats_get(l, &ws);
    assert_true(ws.wakes >= LOOP_WAKE_WARMUP);
    assert_true(ws.p99_ns >= ws.p50_ns);
    assert_true(ws.max_ns >= ws.p99_ns);
    assert_true(ws.spin_ns >= LOOP_SPIN_MARGIN_NS);
    assert_true(ws.spin_ns <= 150000);
    assert_int_equal(ws.spin_ns, loop_timer_spin_ns(l));

    /* a tight bound wins over whatever the VM's wake-ups are */
    loop_set_timer_spin_auto(l, 3000);
    assert_true(loop_timer_spin_ns(l) <= 3000);
    run_chain(l, &c, LOOP_WAKE_WARMUP, 300000);
    assert_true(loop_timer_spin_ns(l) <= 3000);
    loop_set_timer_spin_auto(l, 0); /* off */
    assert_int_equal(loop_timer_spin_ns(l), 0);
    loop_free(l);
}

/* Spinning is only for the last stretch: a loop whose only timer is
 * 200 ms away sleeps (CPU time a small part of the wait), and a loop
 * with no timer at all does not poll. */
static void
test_loop_spin_idle_uses_little_cpu(void **state)
{
    struct mt_err err = {0};
    struct loop *l = loop_new(NULL, 16, &err);
    struct loop_wake_stats ws;
    struct loop_timer t;
    uint64_t cpu0, wall0, cpu, wall;
    int fired = 0;

    assert_non_null(l);
    loop_set_timer_spin_auto(l, LOOP_SPIN_AUTO_MAX_NS);
    loop_timer_init(&t);
    cpu0 = thread_cpu_ns();
    wall0 = loop_update_time(l);
    loop_timer_start(l, &t, wall0 + 200000000, on_timer_count, &fired);
    while (!fired)
        assert_int_equal(loop_run_once(l, UINT64_MAX), 0);
    cpu = thread_cpu_ns() - cpu0;
    wall = mt_now_ns() - wall0;
    assert_true(wall >= 200000000);
    /* at most the spin window (0.2 ms) plus a few syscalls; 20 ms is a
     * generous bound on a loaded machine, far below a busy 200 ms */
    assert_true(cpu < 20000000);

    loop_wake_stats_get(l, &ws);
    cpu0 = thread_cpu_ns();
    assert_int_equal(loop_run_once(l, 200000000), 0); /* no timer: sleeps */
    cpu = thread_cpu_ns() - cpu0;
    assert_true(cpu < 20000000);
    loop_free(l);
}

struct interleave {
    struct loop_timer t;
    uint64_t *now; /* the manual clock */
    int log[4];
    int n;
};

static void
on_io_slow(struct loop *l, int fd, void *arg, unsigned ev)
{
    struct interleave *s = arg;
    char b[8];

    (void)l;
    (void)ev;
    assert_true(read(fd, b, sizeof(b)) > 0);
    s->log[s->n++] = 1;
    *s->now += 1000; /* this callback "takes" 1 us of the manual clock */
}

static void
on_timer_mark(struct loop *l, struct loop_timer *t, void *arg)
{
    struct interleave *s = arg;
    (void)l;
    (void)t;
    s->log[s->n++] = 2;
}

/* In precision mode a timer that falls due during a tick's I/O runs
 * between two fd callbacks; without spin it waits for the next tick. */
static void
test_loop_spin_runs_timers_between_io(void **state)
{
    for (int spin = 0; spin <= 1; spin++) {
        uint64_t now = 1000000;
        struct mt_clock clk;
        struct loop *l = manual_loop(&clk, &now);
        struct interleave s = {.now = &now};
        int a[2], b[2];

        if (spin)
            loop_set_timer_spin(l, 100000);
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, a), 0);
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, b), 0);
        assert_int_equal(loop_fd_add(l, a[0], LOOP_READ, on_io_slow, &s), 0);
        assert_int_equal(loop_fd_add(l, b[0], LOOP_READ, on_io_slow, &s), 0);
        loop_timer_init(&s.t);
        loop_timer_start(l, &s.t, now + 500, on_timer_mark, &s);
        assert_int_equal(write(a[1], "1", 1), 1);
        assert_int_equal(write(b[1], "2", 1), 1);
        assert_int_equal(loop_run_once(l, 0), 0);
        if (spin) {
            assert_int_equal(s.n, 3);
            assert_int_equal(s.log[0], 1);
            assert_int_equal(s.log[1], 2); /* due after the first callback */
            assert_int_equal(s.log[2], 1);
        } else {
            assert_int_equal(s.n, 2); /* both fds; the timer next tick */
            assert_int_equal(loop_run_once(l, 0), 0);
            assert_int_equal(s.n, 3);
            assert_int_equal(s.log[2], 2);
        }
        loop_fd_del(l, a[0]);
        loop_fd_del(l, b[0]);
        for (int i = 0; i < 2; i++) {
            close(a[i]);
            close(b[i]);
        }
        loop_free(l);
    }
}

struct batch {
    struct loop_timer t[4];
    uint64_t *now;   /* the manual clock */
    int id[8];       /* timer ids in firing order */
    uint32_t pos[8]; /* their loop_timer_batch_pos */
    int n;
};

static void
on_timer_batch(struct loop *l, struct loop_timer *t, void *arg)
{
    struct batch *b = arg;
    int id = (int)(t - b->t);

    assert_true(b->n < 8);
    assert_true(t->deadline_ns <= *b->now); /* never early */
    b->id[b->n] = id;
    b->pos[b->n++] = loop_timer_batch_pos(l);
    *b->now += 300; /* a reply's write() "takes" 300 ns */
    /* t3 falls due before the batch ends but is started during it: it
     * waits for the next pass */
    if (id == 0)
        loop_timer_start(l, &b->t[3], 1550, on_timer_batch, b);
}

/* Batch positions count the timer callbacks of one pass; in precision
 * mode a timer that falls due while the batch runs joins it (the clock is
 * read again), without spin it waits for the next tick; a timer started
 * during the batch always waits for the next tick. */
static void
test_loop_timer_batch_pos_and_join(void **state)
{
    for (int spin = 0; spin <= 1; spin++) {
        uint64_t now = 1000;
        struct mt_clock clk;
        struct loop *l = manual_loop(&clk, &now);
        struct batch b = {.now = &now};

        if (spin)
            loop_set_timer_spin(l, 100000);
        for (int i = 0; i < 4; i++)
            loop_timer_init(&b.t[i]);
        loop_timer_start(l, &b.t[0], 1000, on_timer_batch, &b);
        loop_timer_start(l, &b.t[1], 1000, on_timer_batch, &b);
        loop_timer_start(l, &b.t[2], 1500, on_timer_batch, &b);
        assert_int_equal(loop_run_once(l, 0), 0);
        assert_int_equal(b.id[0], 0);
        assert_int_equal(b.pos[0], 0);
        assert_int_equal(b.id[1], 1);
        assert_int_equal(b.pos[1], 1);
        if (spin) { /* t2 fell due at 1500 < 1600: joined the batch */
            assert_int_equal(b.n, 3);
            assert_int_equal(b.id[2], 2);
            assert_int_equal(b.pos[2], 2);
        } else {
            assert_int_equal(b.n, 2);
        }
        assert_true(loop_timer_active(&b.t[3])); /* not in this pass */
        assert_int_equal(loop_run_once(l, 0), 0);
        if (spin) {
            assert_int_equal(b.n, 4);
            assert_int_equal(b.id[3], 3);
            assert_int_equal(b.pos[3], 0);
        } else { /* a new batch in deadline order: t2 (1500), t3 (1550) */
            assert_int_equal(b.n, 4);
            assert_int_equal(b.id[2], 2);
            assert_int_equal(b.pos[2], 0);
            assert_int_equal(b.id[3], 3);
            assert_int_equal(b.pos[3], 1);
        }
        loop_free(l);
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loop_timer_order_and_ties),
        cmocka_unit_test(test_loop_timer_heap_many),
        cmocka_unit_test(test_loop_timer_stop_restart),
        cmocka_unit_test(test_loop_deadline_overflow_clamps),
        cmocka_unit_test(test_loop_real_timer_not_early),
        cmocka_unit_test(test_loop_stop_from_thread_and_restart),
        cmocka_unit_test(test_loop_wake_never_lost),
        cmocka_unit_test(test_loop_new_alloc_failure),
        cmocka_unit_test(test_loop_spin_fixed_order_not_early),
        cmocka_unit_test(test_loop_spin_auto_bounded),
        cmocka_unit_test(test_loop_spin_idle_uses_little_cpu),
        cmocka_unit_test(test_loop_spin_runs_timers_between_io),
        cmocka_unit_test(test_loop_timer_batch_pos_and_join),
        cmocka_unit_test(test_loop_poll_next),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
