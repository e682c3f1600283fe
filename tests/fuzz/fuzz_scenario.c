/*
 * fuzz_scenario.c -- the simulator's scenario and host-facts files
 * (sim/scenario.c, sim/params.c) over arbitrary bytes: `mtrace sim
 * --scenario FILE` and `--host FILE` read files a user wrote or a
 * calibration run left half-written.  Nothing may crash or over-read; a
 * refusal with a message is fine.  The bytes reach the loader as a file
 * (a memfd), as they do from the CLI.
 *
 * Property: what loads prints (every table entry, "key = value [origin]",
 * as the parameter block does) to a scenario file that loads again to the
 * same printed values: parse -> print -> parse is a fixed point.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/err.h"
#include "core/log.h"
#include "sim/params.h"
#include "sim/scenario.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Writes one scenario's entries (name as the [NAME] header). */
static void
print_one(FILE *f, const struct sim_scenario *sc, bool header)
{
    char v[256];

    if (header)
        fprintf(f, "[%s]\n", sc->p.name);
    for (size_t i = 0; i < sim_param_count; i++) {
        if (sim_param_table[i].type == SIM_P_STR)
            continue;
        sim_params_format(&sc->p, i, v, sizeof(v));
        fprintf(f, "%s = %s [%s]\n", sim_param_table[i].key, v,
                sim_origin_name(sc->p.origin[i]));
    }
}

static bool
same_values(const struct sim_scenario *a, const struct sim_scenario *b)
{
    for (size_t i = 0; i < sim_param_count; i++) {
        char x[256], y[256];

        sim_params_format(&a->p, i, x, sizeof(x));
        sim_params_format(&b->p, i, y, sizeof(y));
        if (strcmp(x, y) != 0 || a->p.origin[i] != b->p.origin[i])
            return false;
    }
    return true;
}

static void
round_trip(const struct sim_scenario_set *s, int fd2, const char *path2)
{
    struct sim_scenario_set t;
    struct mt_err err = {0};
    FILE *f;

    if (ftruncate(fd2, 0) != 0 || lseek(fd2, 0, SEEK_SET) != 0)
        return;
    f = fdopen(dup(fd2), "w");
    if (f == NULL)
        return;
    if (s->n == 0)
        print_one(f, &s->base, false);
    for (size_t k = 0; k < s->n; k++)
        print_one(f, &s->v[k], true);
    fclose(f);
    sim_scenario_set_init(&t);
    if (sim_scenario_load(&t, path2, false, &err) != 0) {
        fprintf(stderr, "printed scenarios do not load: %s\n", err.msg);
        abort();
    }
    if (t.n != s->n)
        abort();
    for (size_t k = 0; k < s->n; k++)
        if (!same_values(&s->v[k], &t.v[k]))
            abort();
    if (s->n == 0 && !same_values(&s->base, &t.base))
        abort();
    sim_scenario_set_free(&t);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1, fd2 = -1;
    char path[64], path2[64];

    if (fd < 0) {
        mt_log_set_level(MT_LOG_ERROR); /* the loader's warnings: noise */
        fd = memfd_create("fuzz_scenario", 0);
        fd2 = memfd_create("fuzz_scenario_out", 0);
        if (fd < 0 || fd2 < 0)
            return 0;
    }
    if (ftruncate(fd, 0) != 0 ||
        (size > 0 && pwrite(fd, data, size, 0) != (ssize_t)size))
        return 0;
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    snprintf(path2, sizeof(path2), "/proc/self/fd/%d", fd2);
    for (int host = 0; host < 2; host++) {
        struct sim_scenario_set s;
        struct mt_err err = {0};

        sim_scenario_set_init(&s);
        if (sim_scenario_load(&s, path, host != 0, &err) == 0)
            round_trip(&s, fd2, path2);
        sim_scenario_set_free(&s);
    }
    return 0;
}
