/*
 * test_sim_cli.c -- sim/sim_cli.c: the one-line what-if, run in-process
 * with stdout and stderr captured.  Without --host it says the host facts
 * are placeholders; it prints a row with the median, its range and the
 * binding resource; --sweep alone is a 16-point grid; bad usage exits 2.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/sim_cli.h"

struct captured {
    int rc;
    char out[65536];
    char err[8192];
};

static void
slurp(FILE *f, char *buf, size_t cap)
{
    size_t n;

    rewind(f);
    n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
}

/* Runs `mtrace sim ARGS...` with stdout and stderr in temporary files. */
static void
run_cli(struct captured *c, int argc, char **argv)
{
    FILE *o = tmpfile(), *e = tmpfile();
    int so, se;

    assert_non_null(o);
    assert_non_null(e);
    fflush(stdout);
    fflush(stderr);
    so = dup(1);
    se = dup(2);
    assert_true(so >= 0 && se >= 0);
    assert_true(dup2(fileno(o), 1) >= 0 && dup2(fileno(e), 2) >= 0);
    c->rc = sim_cli_main(argc, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(so, 1);
    dup2(se, 2);
    close(so);
    close(se);
    slurp(o, c->out, sizeof(c->out));
    slurp(e, c->err, sizeof(c->err));
    fclose(o);
    fclose(e);
}

static size_t
count_lines(const char *s, const char *prefix)
{
    size_t n = 0, len = strlen(prefix);

    for (const char *p = s; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : "")
        n += strncmp(p, prefix, len) == 0;
    return n;
}

static void
test_sim_cli_one_liner(void **state)
{
    static struct captured c;
    char *argv[] = {"sim",
                    "--seq-mean-ms",
                    "0.25",
                    "--threads",
                    "20",
                    "--delay-ms",
                    "2",
                    "--runtime",
                    "free-threaded",
                    "--seeds",
                    "3",
                    "--no-params",
                    NULL};
    char *row, bind[16];
    double mid, lo, hi, sd, sdlo, sdhi, p50, p99;

    (void)state;
    run_cli(&c, 12, argv);
    assert_int_equal(c.rc, 0);
    assert_non_null(strstr(c.err, "placeholders"));
    row = strstr(c.out, "\nsim ");
    assert_non_null(row);
    /* sim ft 2 20 MEAN [LO-HI] SD [LO-HI] P50 P99 BINDS ... */
    assert_int_equal(sscanf(row,
                            "\nsim ft 2 20 %lf [%lf-%lf] %lf [%lf-%lf] %lf "
                            "%lf %15s",
                            &mid, &lo, &hi, &sd, &sdlo, &sdhi, &p50, &p99,
                            bind),
                     9);
    assert_true(lo <= mid && mid <= hi && sdlo <= sd && sd <= sdhi);
    assert_true(mid > 2.0); /* the delay alone is 2 ms */
    assert_true(p99 >= p50);
    /* 20 free-threaded threads of ~0.2 ms CPU on 2 placeholder cores in a
     * 2.2 ms round trip: the cores are the largest demand, and 20 x 0.1 ms
     * stays under the round trip: nothing saturates, the delay binds */
    assert_string_equal(bind, "delay");
}

static void
test_sim_cli_sweep_alone(void **state)
{
    static struct captured c;
    char *argv[] = {"sim", "--seq-mean-ms", "0.25", "--sweep", "--seeds",
                    "1",   "--calls",       "20",   "--csv",   "--no-params",
                    NULL};

    (void)state;
    run_cli(&c, 10, argv);
    assert_int_equal(c.rc, 0);
    assert_int_equal(count_lines(c.out, "sim threads="), 16);
    assert_non_null(strstr(c.out, "sim threads=20 delay=2,gil,deadline,2,20,"));
}

static void
test_sim_cli_bad_usage(void **state)
{
    static struct captured c;
    char *a1[] = {"sim", "--threads", "0", NULL};
    char *a2[] = {"sim", "--seq-mean-ms", "0.2,x", NULL};

    (void)state;
    run_cli(&c, 3, a1);
    assert_int_equal(c.rc, 2);
    assert_non_null(strstr(c.err, "threads"));
    run_cli(&c, 3, a2);
    assert_int_equal(c.rc, 2);
    assert_non_null(strstr(c.err, "is not a number"));
    {
        char *a3[] = {"sim", "--seq-cpu-at", "0:200,2", NULL};
        run_cli(&c, 3, a3);
        assert_int_equal(c.rc, 2);
        assert_non_null(strstr(c.err, "is not DELAY_MS:CPU_US"));
    }
}

/* The sequential runs at two delays and the alternating-core run: one
 * calibration whose parameter block says where py_call_us, the idle curve
 * and xcore_frac came from; the 2 ms sequential row gets its CPU back. */
static void
test_sim_cli_idle_curve_and_xcore(void **state)
{
    static struct captured c;
    char *argv[] = {"sim", "--seq-cpu-at", "0:200,2:400", "--seq-xcore-cpu-us",
                    "300", "--delay-ms",   "2",           "--seeds",
                    "2",   "--json",       NULL};
    const char *cpu;

    (void)state;
    run_cli(&c, 10, argv);
    assert_int_equal(c.rc, 0);
    assert_non_null(strstr(c.err, "idle curve from 2 delays"));
    assert_non_null(strstr(c.err, "on alternating cores"));
    cpu = strstr(c.out, "\"cpu_us_per_call\":");
    assert_non_null(cpu);
    /* one thread at 2 ms: the 2 ms run's 400 us less its GIL-released
     * syscalls and switch-in (placeholder facts), within the spread */
    assert_true(fabs(atof(cpu + 18) - 400) < 400 * 0.05);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sim_cli_one_liner),
        cmocka_unit_test(test_sim_cli_sweep_alone),
        cmocka_unit_test(test_sim_cli_bad_usage),
        cmocka_unit_test(test_sim_cli_idle_curve_and_xcore),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
