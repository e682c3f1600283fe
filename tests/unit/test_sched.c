/*
 * test_sched.c -- core/sched.c: SCHED_FIFO for loop threads, and back;
 * SCHED_BATCH (capture --batch-loops).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>

#include "core/err.h"
#include "core/sched.h"

static void
test_sched_rejects_out_of_range(void **state)
{
    struct mt_err err;

    (void)state;
    assert_int_equal(sched_set_realtime(-1, &err), MT_EUSAGE);
    assert_non_null(strstr(err.msg, "out of range"));
    assert_int_equal(sched_set_realtime(100, &err), MT_EUSAGE);
    assert_int_equal(sched_is_realtime(), 0);
}

static void
test_sched_zero_leaves_policy(void **state)
{
    (void)state;
    assert_int_equal(sched_set_realtime(0, NULL), MT_OK);
    assert_int_equal(sched_is_realtime(), 0);
    assert_int_equal(sched_set_normal(), MT_OK);
}

static void *
sched_thread(void *arg)
{
    struct mt_err err;
    int *out = arg;

    memset(&err, 0, sizeof(err));
    out[0] = sched_set_realtime(1, &err);
    out[1] = sched_is_realtime();
    out[2] = sched_set_normal();
    out[3] = sched_is_realtime();
    out[4] = out[0] == -EPERM && strstr(err.msg, "CAP_SYS_NICE") != NULL;
    return NULL;
}

/* Either the host allows SCHED_FIFO and the round trip works, or the
 * refusal is -EPERM with a message that says what is missing. */
static void
test_sched_round_trip_or_eperm(void **state)
{
    pthread_t t;
    int out[5] = {0};

    (void)state;
    assert_int_equal(pthread_create(&t, NULL, sched_thread, out), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    if (out[0] == MT_OK) {
        assert_int_equal(out[1], 1);
        assert_int_equal(out[2], MT_OK);
        assert_int_equal(out[3], 0);
    } else {
        assert_int_equal(out[0], -EPERM);
        assert_int_equal(out[4], 1);
        assert_int_equal(out[1], 0);
    }
    assert_int_equal(sched_is_realtime(), 0);
}

static void *
batch_thread(void *arg)
{
    int *out = arg;

    out[0] = sched_policy();
    out[1] = sched_set_batch();
    out[2] = sched_policy();
    out[3] = sched_is_realtime();
    return NULL;
}

/* SCHED_BATCH needs no privilege: a normal thread always gets it, it is
 * not a real-time policy, and the creating thread keeps its own. */
static void
test_sched_batch(void **state)
{
    pthread_t t;
    int out[4] = {-2, -2, -2, -2};

    (void)state;
    assert_int_equal(pthread_create(&t, NULL, batch_thread, out), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(out[0], SCHED_OTHER);
    assert_int_equal(out[1], MT_OK);
    assert_int_equal(out[2], SCHED_BATCH);
    assert_int_equal(out[3], 0);
    assert_int_equal(sched_policy(), SCHED_OTHER);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sched_rejects_out_of_range),
        cmocka_unit_test(test_sched_zero_leaves_policy),
        cmocka_unit_test(test_sched_round_trip_or_eperm),
        cmocka_unit_test(test_sched_batch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
