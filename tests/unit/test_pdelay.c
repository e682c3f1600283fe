/*
 * test_pdelay.c -- capture/pdelay.c: the spin bound of a real-time loop
 * (pdelay_bound_spin) on a real core/loop, no sockets.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "capture/pdelay.h"
#include "core/loop.h"

struct fixture {
    struct proxy p;
    struct ploop pl;
};

static int
setup(void **state)
{
    static struct fixture f;
    struct mt_err err = {0};

    memset(&f, 0, sizeof(f));
    f.p.delay_ns = 1000000; /* --delay-ms 1 */
    f.p.spin_ns = 100000;   /* --spin-us 100 */
    f.p.rt_prio = 1;
    f.pl.p = &f.p;
    f.pl.l = loop_new(NULL, 0, &err);
    if (f.pl.l == NULL)
        return -1;
    loop_set_timer_spin(f.pl.l, f.p.spin_ns);
    f.pl.spin_cur_ns = f.p.spin_ns;
    *state = &f;
    return 0;
}

static int
teardown(void **state)
{
    struct fixture *f = *state;
    loop_free(f->pl.l);
    return 0;
}

/* Few replies held: --spin-us stands (5 x 100 us per 1 ms is half). */
static void
test_pdelay_bound_spin_few(void **state)
{
    struct fixture *f = *state;

    f->pl.held = 0;
    pdelay_bound_spin(&f->pl);
    assert_int_equal(loop_timer_spin_ns(f->pl.l), 100000);
    f->pl.held = 5;
    pdelay_bound_spin(&f->pl);
    assert_int_equal(loop_timer_spin_ns(f->pl.l), 100000);
}

/* Many held: the window shrinks to (delay / 2) / held, and comes back. */
static void
test_pdelay_bound_spin_many(void **state)
{
    struct fixture *f = *state;

    f->pl.held = 32;
    pdelay_bound_spin(&f->pl);
    assert_int_equal(loop_timer_spin_ns(f->pl.l), 500000 / 32);
    assert_int_equal(f->pl.spin_cur_ns, 500000 / 32);
    f->pl.held = 1;
    pdelay_bound_spin(&f->pl);
    assert_int_equal(loop_timer_spin_ns(f->pl.l), 100000);
}

/* A window longer than the delay (--spin-us 1000, --delay-ms 1): even one
 * held reply caps it at half the delay. */
static void
test_pdelay_bound_spin_long(void **state)
{
    struct fixture *f = *state;

    f->p.spin_ns = 1000000;
    f->pl.held = 1;
    pdelay_bound_spin(&f->pl);
    assert_int_equal(loop_timer_spin_ns(f->pl.l), 500000);
    f->p.spin_ns = 100000;
}

/* --spin-us auto: the bound becomes the adaptive window's maximum. */
static void
test_pdelay_bound_spin_auto(void **state)
{
    struct fixture *f = *state;

    f->p.spin_auto = true;
    f->p.spin_ns = LOOP_SPIN_AUTO_MAX_NS;
    f->pl.held = 10;
    pdelay_bound_spin(&f->pl);
    assert_int_equal(loop_timer_spin_ns(f->pl.l), 50000); /* before warm-up */
    f->p.spin_auto = false;
    f->p.spin_ns = 100000;
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pdelay_bound_spin_few),
        cmocka_unit_test(test_pdelay_bound_spin_many),
        cmocka_unit_test(test_pdelay_bound_spin_long),
        cmocka_unit_test(test_pdelay_bound_spin_auto),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
