/*
 * test_pmqos.c -- core/pmqos.c: a CPU latency request held and dropped.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/err.h"
#include "core/pmqos.h"

static void
test_pmqos_rejects_out_of_range(void **state)
{
    struct pmqos q;
    struct mt_err err;

    (void)state;
    pmqos_init(&q);
    assert_int_equal(pmqos_hold(&q, -1, &err), MT_EUSAGE);
    assert_non_null(strstr(err.msg, "out of range"));
    assert_int_equal(q.fd, -1);
    pmqos_release(&q);
}

static void
test_pmqos_missing_device(void **state)
{
    struct pmqos q;
    struct mt_err err;

    (void)state;
    pmqos_init(&q);
    assert_int_equal(pmqos_hold_at(&q, "/nonexistent/cpu_dma_latency", 0, &err),
                     -ENOENT);
    assert_non_null(strstr(err.msg, "/nonexistent/cpu_dma_latency"));
    assert_int_equal(q.fd, -1);
}

/* A regular file stands in for the device: the request is the raw s32. */
static void
test_pmqos_writes_raw_s32(void **state)
{
    char path[] = "/tmp/test_pmqos.XXXXXX";
    struct pmqos q;
    struct mt_err err;
    int32_t v = -1;
    FILE *f;
    int fd;

    (void)state;
    fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    pmqos_init(&q);
    assert_int_equal(pmqos_hold_at(&q, path, 7, &err), MT_OK);
    assert_int_equal(q.us, 7);
    assert_true(q.fd >= 0);
    pmqos_release(&q);
    assert_int_equal(q.fd, -1);
    pmqos_release(&q);
    f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fread(&v, sizeof(v), 1, f), 1);
    fclose(f);
    unlink(path);
    assert_int_equal(v, 7);
}

/* Where the device is writable (root), holding 0 lowers the kernel's bound
 * to 0 and closing the file restores what it was; elsewhere the refusal
 * says why. */
static void
test_pmqos_device_round_trip_or_refusal(void **state)
{
    struct pmqos q;
    struct mt_err err;
    int before, during = -1, after = -1, rc;

    (void)state;
    if (pmqos_current(&before) != MT_OK)
        skip();
    pmqos_init(&q);
    rc = pmqos_hold(&q, 0, &err);
    if (rc != MT_OK) {
        assert_true(rc == -EACCES || rc == -EPERM);
        assert_non_null(strstr(err.msg, "needs root"));
        return;
    }
    assert_int_equal(pmqos_current(&during), MT_OK);
    assert_int_equal(during, 0);
    pmqos_release(&q);
    assert_int_equal(pmqos_current(&after), MT_OK);
    assert_int_equal(after, before);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pmqos_rejects_out_of_range),
        cmocka_unit_test(test_pmqos_missing_device),
        cmocka_unit_test(test_pmqos_writes_raw_s32),
        cmocka_unit_test(test_pmqos_device_round_trip_or_refusal),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
