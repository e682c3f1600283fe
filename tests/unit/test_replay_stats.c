/*
 * test_replay_stats.c -- replay/replay_stats.c: every listed counter and
 * histogram is merged, and every listed counter reaches the JSON summary
 * under its key.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay/replay_stats.h"
#include "replay/replay_summary.h"

/* Two loops' counters, each a distinct value, merge into their sums;
 * histograms add their samples; the largest batch is the largest. */
static void
test_replay_stats_merge_sums_every_counter(void **state)
{
    struct replay_stats *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b)),
                        *sum = malloc(sizeof(*sum));
    uint64_t k = 1;

    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(sum);
    replay_stats_init(a);
    replay_stats_init(b);
    replay_stats_init(sum);
#define XX(field, key, line, text)                                             \
    a->field = k;                                                              \
    b->field = 100 * k++;
    REPLAY_STATS_COUNTERS(XX)
#undef XX
#define XX(field)                                                              \
    a->field = k;                                                              \
    b->field = 100 * k++;
    REPLAY_STATS_INTERNAL(XX)
#undef XX
#define XH(field, key)                                                         \
    delay_hist_add(&a->field, 1000);                                           \
    delay_hist_add(&b->field, 2000);
    REPLAY_STATS_HISTS(XH)
#undef XH
    a->batch_max = 3;
    b->batch_max = 2;
    replay_stats_merge(sum, a);
    replay_stats_merge(sum, b);
    k = 1;
#define XX(field, key, line, text)                                             \
    assert_int_equal(sum->field, 101 * k);                                     \
    k++;
    REPLAY_STATS_COUNTERS(XX)
#undef XX
#define XX(field)                                                              \
    assert_int_equal(sum->field, 101 * k);                                     \
    k++;
    REPLAY_STATS_INTERNAL(XX)
#undef XX
#define XH(field, key) assert_int_equal(sum->field.n, 2);
    REPLAY_STATS_HISTS(XH)
#undef XH
    assert_int_equal(sum->batch_max, 3);
    free(a);
    free(b);
    free(sum);
}

/* The JSON summary holds "key":value for every listed counter, and a
 * histogram object for every listed histogram. */
static void
test_replay_stats_json_has_every_key(void **state)
{
    struct replay_stats *st = malloc(sizeof(*st));
    struct replay_pmqos_seen p = {.held_us = -1, .kernel_us = -1};
    char *buf = NULL, want[96];
    size_t len = 0;
    uint64_t k = 7;
    FILE *f = open_memstream(&buf, &len);

    assert_non_null(st);
    assert_non_null(f);
    replay_stats_init(st);
#define XX(field, key, line, text) st->field = k++;
    REPLAY_STATS_COUNTERS(XX)
#undef XX
    assert_int_equal(replay_summary_json(f, "mem", st, false, &p), 0);
    k = 7;
#define XX(field, key, line, text)                                             \
    snprintf(want, sizeof(want), "\"%s\":%llu,", key,                          \
             (unsigned long long)k++);                                         \
    assert_non_null(strstr(buf, want));
    REPLAY_STATS_COUNTERS(XX)
#undef XX
#define XH(field, key)                                                         \
    snprintf(want, sizeof(want), "\"%s\":{\"n\":0,", key);                     \
    assert_non_null(strstr(buf, want));
    REPLAY_STATS_HISTS(XH)
#undef XH
    free(buf);
    free(st);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replay_stats_merge_sums_every_counter),
        cmocka_unit_test(test_replay_stats_json_has_every_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
