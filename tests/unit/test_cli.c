/*
 * test_cli.c -- core/cli.c: the overflow-checked numbers and durations of
 * every subcommand's options, and the usage-error line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "core/cli.h"

static void
test_cli_parse_u64_valid(void **state)
{
    uint64_t v = 0;

    assert_true(cli_parse_u64("0", 0, 10, &v));
    assert_int_equal(v, 0);
    assert_true(cli_parse_u64("18446744073709551615", 0, UINT64_MAX, &v));
    assert_true(v == UINT64_MAX);
    assert_true(cli_parse_u64("65535", 1, 65535, &v));
    assert_int_equal(v, 65535);
}

/* A seed as decimal or 0x hex; the decimal form as cli_parse_u64 takes
 * it. */
static void
test_cli_parse_u64_hex_valid(void **state)
{
    uint64_t v = 0;

    assert_true(cli_parse_u64_hex("0x10", 0, UINT64_MAX, &v));
    assert_int_equal(v, 16);
    assert_true(cli_parse_u64_hex("0XfFfFfFfFfFfFfFfF", 0, UINT64_MAX, &v));
    assert_true(v == UINT64_MAX);
    assert_true(cli_parse_u64_hex("010", 0, 100, &v));
    assert_int_equal(v, 10); /* decimal, not octal */
    assert_true(cli_parse_u64_hex("0", 0, 100, &v));
    assert_int_equal(v, 0);
}

static void
test_cli_parse_double_valid(void **state)
{
    double d = 0;
    uint64_t ns = 0;

    assert_true(cli_parse_double("0.5", 0, 1, &d));
    assert_true(d == 0.5);
    assert_true(cli_parse_double("1e3", 0, 1000, &d));
    assert_true(cli_parse_duration_ns("1.5", 0, 3600000, 1e6, &ns));
    assert_int_equal(ns, 1500000);
    assert_true(cli_parse_duration_ns("0.0000000004", 0, 10, 1e9, &ns));
    assert_int_equal(ns, 0); /* rounded to the nearest nanosecond */
    assert_true(cli_parse_duration_ns("31536000", 0, 31536000, 1e9, &ns));
    assert_true(ns == 31536000000000000ull);
}

/* Junk, signs, spaces, overflow and range: refused, the output
 * untouched. */
static void
test_cli_parse_invalid(void **state)
{
    static const char *const bad_u64[] = {
        "",
        "-1",
        "+1",
        " 1",
        "1 ",
        "0x10",
        "1e3",
        "abc",
        "18446744073709551616",
        "99999999999999999999999",
    };
    uint64_t v = 7, ns = 7;
    double d = 7;
    int i = 7;

    for (size_t k = 0; k < sizeof(bad_u64) / sizeof(bad_u64[0]); k++)
        assert_false(cli_parse_u64(bad_u64[k], 0, UINT64_MAX, &v));
    assert_false(cli_parse_u64("11", 0, 10, &v));
    assert_false(cli_parse_u64("0", 1, 10, &v));
    assert_int_equal(v, 7);
    static const char *const bad_hex[] = {
        "0x",  "0x-1", "0x 1", "0x+1", "0x1g", "0x10000000000000000",
        "x10", " 0x1",
    };
    for (size_t k = 0; k < sizeof(bad_hex) / sizeof(bad_hex[0]); k++)
        assert_false(cli_parse_u64_hex(bad_hex[k], 0, UINT64_MAX, &v));
    for (size_t k = 0; k < sizeof(bad_u64) / sizeof(bad_u64[0]); k++)
        if (strcmp(bad_u64[k], "0x10") != 0)
            assert_false(cli_parse_u64_hex(bad_u64[k], 0, UINT64_MAX, &v));
    assert_false(cli_parse_u64_hex("0x11", 0, 16, &v));
    assert_false(cli_parse_u64_hex("0x0", 1, 16, &v));
    assert_int_equal(v, 7);
    assert_false(cli_parse_int("2147483648", -5, 2147483647, &i));
    assert_false(cli_parse_int("-6", -5, 5, &i));
    assert_false(cli_parse_int("1.5", -5, 5, &i));
    assert_false(cli_parse_int("", -5, 5, &i));
    assert_int_equal(i, 7);
    assert_true(cli_parse_int("-5", -5, 5, &i));
    assert_int_equal(i, -5);
    assert_false(cli_parse_double("-1", -10, 10, &d)); /* no sign */
    assert_false(cli_parse_double("nan", 0, 10, &d));
    assert_false(cli_parse_double("inf", 0, 1e300, &d));
    assert_false(cli_parse_double("1e999", 0, 1e300, &d));
    assert_false(cli_parse_double("1ms", 0, 10, &d));
    assert_false(cli_parse_double("", 0, 10, &d));
    assert_false(cli_parse_duration_ns("3600001", 0, 3600000, 1e6, &ns));
    assert_true(d == 7);
    assert_int_equal(ns, 7);
}

/* The one line, on stderr, and exit status 2 returned as such. */
static void
test_cli_usage_error_line(void **state)
{
    char buf[256] = "";
    FILE *f = tmpfile();
    FILE *saved = stderr;

    assert_non_null(f);
    stderr = f;
    assert_int_equal(cli_usage_error("stats", "--top wants %d", 5),
                     CLI_EXIT_USAGE);
    stderr = saved;
    rewind(f);
    assert_non_null(fgets(buf, sizeof(buf), f));
    assert_string_equal(buf, "mtrace stats: --top wants 5; run 'mtrace "
                             "stats --help'\n");
    assert_null(fgets(buf, sizeof(buf), f)); /* one line */
    fclose(f);
}

/* The one TRACE operand: taken when alone, refused when missing or
 * followed by another (exit status 2). */
static void
test_cli_take_trace_operands(void **state)
{
    char *one[] = {"dump", "--json", "t.zst", NULL};
    char *two[] = {"dump", "a.zst", "b.zst", NULL};
    const char *path = NULL;
    FILE *saved = stderr, *f = tmpfile();

    assert_non_null(f);
    optind = 2;
    assert_int_equal(cli_take_trace("dump", "mtrace dump TRACE", 3, one, &path),
                     0);
    assert_string_equal(path, "t.zst");
    stderr = f; /* the refusals' lines */
    optind = 3;
    path = NULL;
    assert_int_equal(cli_take_trace("dump", "mtrace dump TRACE", 3, one, &path),
                     CLI_EXIT_USAGE);
    optind = 1;
    assert_int_equal(cli_take_trace("dump", "mtrace dump TRACE", 3, two, &path),
                     CLI_EXIT_USAGE);
    stderr = saved;
    assert_null(path);
    fclose(f);
}

int
main(void)
{
    const struct CMUnitTest valid[] = {
        cmocka_unit_test(test_cli_parse_u64_valid),
        cmocka_unit_test(test_cli_parse_u64_hex_valid),
        cmocka_unit_test(test_cli_parse_double_valid),
        cmocka_unit_test(test_cli_usage_error_line),
        cmocka_unit_test(test_cli_take_trace_operands),
    };
    const struct CMUnitTest invalid[] = {
        cmocka_unit_test(test_cli_parse_invalid),
    };
    int rc = cmocka_run_group_tests_name("cli valid", valid, NULL, NULL);
    return rc | cmocka_run_group_tests_name("cli invalid", invalid, NULL, NULL);
}
