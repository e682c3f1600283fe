/*
 * fuzz_scenario.c -- the simulator's scenario and host-facts files
 * (sim/scenario.c, sim/params.c) over arbitrary bytes: `mtrace sim
 * --scenario FILE` and `--host FILE` read files a user wrote or a
 * calibration run left half-written.  Nothing may crash or over-read; a
 * refusal with a message is fine.  The bytes reach the loader as a file
 * (a memfd), as they do from the CLI; what loads is formatted as sim
 * prints it.
 */
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/err.h"
#include "core/log.h"
#include "sim/params.h"
#include "sim/scenario.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    char path[64];

    if (fd < 0) {
        mt_log_set_level(MT_LOG_ERROR); /* the loader's warnings: noise */
        fd = memfd_create("fuzz_scenario", 0);
        if (fd < 0)
            return 0;
    }
    if (ftruncate(fd, 0) != 0 ||
        (size > 0 && pwrite(fd, data, size, 0) != (ssize_t)size))
        return 0;
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    for (int host = 0; host < 2; host++) {
        struct sim_scenario_set s;
        struct mt_err err = {0};

        sim_scenario_set_init(&s);
        if (sim_scenario_load(&s, path, host != 0, &err) == 0)
            for (size_t k = 0; k <= s.n; k++) /* as sim prints them */
                for (size_t i = 0; i < sim_param_count; i++) {
                    char buf[256];
                    sim_params_format(k < s.n ? &s.v[k].p : &s.base.p, i, buf,
                                      sizeof(buf));
                }
        sim_scenario_set_free(&s);
    }
    return 0;
}
