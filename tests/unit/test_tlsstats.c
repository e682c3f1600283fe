/*
 * test_tlsstats.c -- replay/tlsstats.c and the TLS parts of the exit
 * summary (replay/replay_summary.c): each core/tls cause counted under its
 * replay cause, a timeout and an abort told apart, versions, the merge of
 * two loops; the summary's TLS line (only with --tls-cert; the causes seen
 * only) and the JSON "tls" object (null without --tls-cert), which libbson
 * must parse.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/wire.h" /* bson.h, without libbson's -Wcast-qual noise */
#include "replay/replay_summary.h"
#include "replay/tlsstats.h"

#define MS 1000000ull

static void
test_tlsstats_add_causes_versions(void **state)
{
    static struct tlsstats t;

    (void)state;
    tlsstats_init(&t);
    tlsstats_add_completed(&t, 0x0304, 2 * MS);
    tlsstats_add_completed(&t, 0x0303, 4 * MS);
    tlsstats_add_completed(&t, 0x0302, 8 * MS); /* not offered, but named */
    assert_int_equal(t.completed, 3);
    assert_int_equal(t.version[TLSSTATS_TLS13], 1);
    assert_int_equal(t.version[TLSSTATS_TLS12], 1);
    assert_int_equal(t.version[TLSSTATS_VERSION_OTHER], 1);
    assert_int_equal(t.time.n, 3);
    assert_int_equal(t.time.max_ns, 8 * MS);

    tlsstats_add_unfinished(&t, TLS_CAUSE_NOT_TLS, false);
    tlsstats_add_unfinished(&t, TLS_CAUSE_NO_CERT, false);
    tlsstats_add_unfinished(&t, TLS_CAUSE_PEER_CERT, false);
    tlsstats_add_unfinished(&t, TLS_CAUSE_CERT_REFUSED, false);
    tlsstats_add_unfinished(&t, TLS_CAUSE_CLOSED, false);
    tlsstats_add_unfinished(&t, TLS_CAUSE_OTHER, false);
    for (int i = 0; i < TLSSTATS_FAIL_N; i++)
        assert_int_equal(t.failed[i], i == TLSSTATS_TIMEOUT ? 0 : 1);
    /* nothing failed: the sweep's timeout, or replay stopping */
    tlsstats_add_unfinished(&t, TLS_CAUSE_NONE, true);
    tlsstats_add_unfinished(&t, TLS_CAUSE_NONE, false);
    assert_int_equal(t.failed[TLSSTATS_TIMEOUT], 1);
    assert_int_equal(t.aborted, 1);
    /* a failure seen first keeps its cause */
    tlsstats_add_unfinished(&t, TLS_CAUSE_CLOSED, true);
    assert_int_equal(t.failed[TLSSTATS_CLOSED], 2);
    assert_int_equal(t.failed[TLSSTATS_TIMEOUT], 1);
    assert_int_equal(tlsstats_failed(&t), 8);
    assert_string_equal(tlsstats_fail_key(TLSSTATS_CLIENT_CERT),
                        "client_cert_refused");
    assert_string_equal(tlsstats_fail_text(TLSSTATS_NOT_TLS), "not TLS");
    assert_string_equal(tlsstats_version_name(TLSSTATS_TLS13), "TLSv1.3");
}

static void
test_tlsstats_merge(void **state)
{
    static struct tlsstats a, b;

    (void)state;
    tlsstats_init(&a);
    tlsstats_init(&b);
    tlsstats_add_completed(&a, 0x0304, 1 * MS);
    tlsstats_add_completed(&b, 0x0304, 3 * MS);
    tlsstats_add_completed(&b, 0x0303, 5 * MS);
    tlsstats_add_unfinished(&a, TLS_CAUSE_NOT_TLS, false);
    tlsstats_add_unfinished(&b, TLS_CAUSE_NOT_TLS, false);
    tlsstats_add_unfinished(&b, TLS_CAUSE_NONE, false);
    tlsstats_merge(&a, &b);
    assert_int_equal(a.completed, 3);
    assert_int_equal(a.version[TLSSTATS_TLS13], 2);
    assert_int_equal(a.version[TLSSTATS_TLS12], 1);
    assert_int_equal(a.failed[TLSSTATS_NOT_TLS], 2);
    assert_int_equal(a.aborted, 1);
    assert_int_equal(a.time.n, 3);
    assert_int_equal(a.time.max_ns, 5 * MS);
}

/* The summary of st as replay prints it (auth off), in a malloc'd
 * string. */
static char *
summary_text(const struct replay_stats *st, bool tls)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    assert_non_null(f);
    replay_summary_print(f, st, false, tls);
    assert_int_equal(fclose(f), 0);
    return buf;
}

static char *
summary_json(const struct replay_stats *st, bool tls)
{
    struct replay_pmqos_seen p = {.held_us = -1, .kernel_us = -1};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    assert_non_null(f);
    assert_int_equal(replay_summary_json(f, "mem", st, tls, &p), 0);
    return buf; /* closed by replay_summary_json */
}

/* A stats struct with 2 TLS 1.3 handshakes of 1 ms, and failures. */
static struct replay_stats *
stats_new(void)
{
    struct replay_stats *st = malloc(sizeof(*st));

    assert_non_null(st);
    replay_stats_init(st);
    st->conns = 5;
    tlsstats_add_completed(&st->tls, 0x0304, 1 * MS);
    tlsstats_add_completed(&st->tls, 0x0304, 1 * MS);
    tlsstats_add_unfinished(&st->tls, TLS_CAUSE_NOT_TLS, false);
    tlsstats_add_unfinished(&st->tls, TLS_CAUSE_NONE, true);
    tlsstats_add_unfinished(&st->tls, TLS_CAUSE_CERT_REFUSED, false);
    return st;
}

static void
test_tlsstats_summary_line(void **state)
{
    struct replay_stats *st = stats_new();
    char *s, *line;

    (void)state;
    s = summary_text(st, false); /* without --tls-cert: no TLS line */
    assert_null(strstr(s, "TLS"));
    free(s);
    s = summary_text(st, true);
    line = strstr(s, "mtrace replay: TLS: ");
    assert_non_null(line);
    assert_true(strncmp(line,
                        "mtrace replay: TLS: 2 handshakes completed (TLSv1.2 "
                        "0, TLSv1.3 2; accept to completion p50 1.00",
                        strlen("mtrace replay: TLS: 2 handshakes completed "
                               "(TLSv1.2 0, TLSv1.3 2; accept to completion "
                               "p50 1.00")) == 0);
    assert_non_null(strstr(line, " ms), 3 failed (not TLS 1, server "
                                 "certificate refused by the client 1, timed "
                                 "out 1)\nmtrace replay: delay"));
    free(s);
    /* nothing failed; one aborted */
    replay_stats_init(st);
    tlsstats_add_completed(&st->tls, 0x0303, 1 * MS);
    tlsstats_add_unfinished(&st->tls, TLS_CAUSE_NONE, false);
    s = summary_text(st, true);
    assert_non_null(strstr(s, "(TLSv1.2 1, TLSv1.3 0; "));
    assert_non_null(strstr(s, " ms), 0 failed, 1 aborted when replay "
                              "stopped\n"));
    free(s);
    free(st);
}

static void
test_tlsstats_summary_json(void **state)
{
    struct replay_stats *st = stats_new();
    bson_error_t err;
    bson_t *b;
    char *s;

    (void)state;
    s = summary_json(st, false);
    assert_non_null(strstr(s, "\"tls\":null,"));
    b = bson_new_from_json((const uint8_t *)s, -1, &err);
    assert_non_null(b);
    bson_destroy(b);
    free(s);
    s = summary_json(st, true);
    assert_non_null(strstr(
        s, "\"tls\":{\"completed\":2,\"versions\":{\"TLSv1.2\":0,"
           "\"TLSv1.3\":2,\"other\":0},\"failed\":3,\"failed_by\":{"
           "\"not_tls\":1,\"no_client_cert\":0,\"client_cert_refused\":0,"
           "\"server_cert_refused\":1,\"closed\":0,\"timeout\":1,\"other\":0},"
           "\"aborted\":0,\"handshake\":{\"n\":2,\"mean_ms\":1.000000,"));
    b = bson_new_from_json((const uint8_t *)s, -1, &err);
    if (b == NULL)
        fail_msg("not JSON: %s: %s", err.message, s);
    bson_destroy(b);
    free(s);
    free(st);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tlsstats_add_causes_versions),
        cmocka_unit_test(test_tlsstats_merge),
        cmocka_unit_test(test_tlsstats_summary_line),
        cmocka_unit_test(test_tlsstats_summary_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
