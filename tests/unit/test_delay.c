/*
 * test_delay.c -- replay/delay.c: distributions, seeded PRNG, histograms.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "replay/delay.h"

static void
test_delay_rng_is_seeded(void **state)
{
    struct mt_rng a, b, c;

    mt_rng_seed(&a, 42);
    mt_rng_seed(&b, 42);
    mt_rng_seed(&c, 43);
    for (int i = 0; i < 100; i++) {
        uint64_t x = mt_rng_next(&a);
        assert_int_equal(x, mt_rng_next(&b));
        assert_true(x != mt_rng_next(&c) || i > 0);
    }
    for (int i = 0; i < 1000; i++) {
        double u = mt_rng_uniform(&a);
        assert_true(u >= 0.0 && u < 1.0);
    }
}

static void
test_delay_fixed_and_recorded(void **state)
{
    struct delay_cfg cfg;
    struct mt_rng r;

    delay_cfg_init(&cfg);
    mt_rng_seed(&r, 1);
    cfg.delay_ns = 1500000; /* 1.5 ms: fractions are kept */
    assert_int_equal(delay_draw_ns(&cfg, &r, 999), 1500000);
    cfg.timing = DELAY_TIMING_RECORDED;
    cfg.speed = 2.0;
    assert_int_equal(delay_draw_ns(&cfg, &r, 1000000), 2000000);
    cfg.delay_ns = 0;
    cfg.speed = 0.5;
    assert_int_equal(delay_draw_ns(&cfg, &r, 1000000), 2000000);
}

/* mean and bounds of n draws */
static void
draw_stats(struct delay_cfg *cfg, int n, double *mean, uint64_t *lo,
           uint64_t *hi)
{
    struct mt_rng r;
    double sum = 0;

    mt_rng_seed(&r, cfg->seed);
    *lo = UINT64_MAX;
    *hi = 0;
    for (int i = 0; i < n; i++) {
        uint64_t d = delay_draw_ns(cfg, &r, 0);
        sum += (double)d;
        if (d < *lo)
            *lo = d;
        if (d > *hi)
            *hi = d;
    }
    *mean = sum / n;
}

static void
test_delay_distributions(void **state)
{
    struct delay_cfg cfg;
    double mean;
    uint64_t lo, hi;

    delay_cfg_init(&cfg);
    cfg.delay_ns = 1000000;
    cfg.jitter_ns = 200000;
    cfg.dist = DELAY_DIST_UNIFORM;
    draw_stats(&cfg, 20000, &mean, &lo, &hi);
    assert_true(lo >= 800000 && hi <= 1200000);
    assert_true(fabs(mean - 1e6) < 5000);
    cfg.dist = DELAY_DIST_NORMAL;
    draw_stats(&cfg, 20000, &mean, &lo, &hi);
    assert_true(fabs(mean - 1e6) < 5000);
    assert_true(lo < 600000 && hi > 1400000); /* tails exist */
    cfg.dist = DELAY_DIST_LOGNORMAL;
    draw_stats(&cfg, 20000, &mean, &lo, &hi);
    assert_true(lo > 0 && mean > 1e6); /* right-skewed around the median */
    /* never negative: clamped */
    cfg.dist = DELAY_DIST_NORMAL;
    cfg.jitter_ns = 5000000;
    draw_stats(&cfg, 2000, &mean, &lo, &hi);
    assert_int_equal(lo, 0);
}

static void
test_delay_dist_parse(void **state)
{
    enum delay_dist d;

    assert_int_equal(delay_dist_parse("lognormal", &d), 0);
    assert_int_equal(d, DELAY_DIST_LOGNORMAL);
    assert_string_equal(delay_dist_name(d), "lognormal");
    assert_int_equal(delay_dist_parse("gauss", &d), MT_EUSAGE);
}

static void
test_delay_hist_quantiles(void **state)
{
    static struct delay_hist h, m;

    delay_hist_init(&h);
    assert_int_equal(delay_hist_quantile(&h, 0.5), 0);
    for (uint64_t i = 1; i <= 1000; i++)
        delay_hist_add(&h, i * 1000); /* 1 us .. 1 ms */
    assert_int_equal(h.n, 1000);
    assert_int_equal(h.max_ns, 1000000);
    assert_int_equal(h.min_ns, 1000);
    /* within one bucket: < 0.2 % */
    assert_true(llabs((long long)delay_hist_quantile(&h, 0.5) - 500000) < 1000);
    assert_true(llabs((long long)delay_hist_quantile(&h, 0.99) - 990000) <
                2000);
    assert_int_equal(delay_hist_quantile(&h, 1.0), 1000000);
    delay_hist_init(&m);
    delay_hist_add(&m, 5);
    delay_hist_merge(&m, &h);
    assert_int_equal(m.n, 1001);
    assert_int_equal(m.min_ns, 5);
    /* exact below 512 ns */
    delay_hist_init(&m);
    delay_hist_add(&m, 300);
    assert_int_equal(delay_hist_quantile(&m, 0.5), 300);
    delay_hist_add(&m, UINT64_MAX); /* the last bucket holds it */
    assert_int_equal(m.max_ns, UINT64_MAX);
}

static void
test_delay_hist_quantile_upper(void **state)
{
    struct delay_hist *h = delay_hist_new();

    (void)state;
    assert_non_null(h);
    assert_int_equal(h->n, 0);
    assert_int_equal(h->min_ns, UINT64_MAX);
    assert_int_equal(delay_hist_quantile_upper(h, 0.5), 0);
    for (uint64_t i = 1; i <= 1000; i++)
        delay_hist_add(h, i * 1000 + 7); /* off the bucket edges */
    /* never below the nearest-rank value, at most 0.2 % above it */
    for (uint64_t k = 1; k <= 1000; k++) {
        uint64_t exact = k * 1000 + 7;
        uint64_t up = delay_hist_quantile_upper(h, (double)k / 1000.0);
        assert_true(up >= exact);
        assert_true(up - exact <= exact / 512);
    }
    assert_int_equal(delay_hist_quantile_upper(h, 1.0), 1000007);
    assert_int_equal(delay_hist_quantile_upper(h, 2.0), 1000007);
    /* rank at least 1: q <= 0 is the smallest value's bucket */
    assert_true(delay_hist_quantile_upper(h, 0.0) >= 1007);
    assert_true(delay_hist_quantile_upper(h, -1.0) <= 1007 + 1007 / 512);
    delay_hist_free(h);
    delay_hist_free(NULL);
    h = delay_hist_new();
    delay_hist_add(h, 300); /* exact below 512 ns */
    assert_int_equal(delay_hist_quantile_upper(h, 0.5), 300);
    delay_hist_add(h, UINT64_MAX); /* the last bucket's bound */
    assert_int_equal(delay_hist_quantile_upper(h, 1.0), UINT64_MAX);
    delay_hist_free(h);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_delay_rng_is_seeded),
        cmocka_unit_test(test_delay_fixed_and_recorded),
        cmocka_unit_test(test_delay_distributions),
        cmocka_unit_test(test_delay_dist_parse),
        cmocka_unit_test(test_delay_hist_quantiles),
        cmocka_unit_test(test_delay_hist_quantile_upper),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
