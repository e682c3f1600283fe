/*
 * report.h -- mtrace sim output: the parameter origins block, a table,
 * CSV, JSON lines, and a gnuplot latency-distribution plot.  Output never
 * contains wall-clock times or host-dependent figures, so the same inputs
 * give byte-identical reports.
 */
#ifndef MT_SIM_REPORT_H
#define MT_SIM_REPORT_H

#include <stdio.h>

#include "core/err.h"
#include "herd.h"
#include "predict.h"
#include "scenario.h"

enum sim_fmt { SIM_FMT_TABLE = 0, SIM_FMT_CSV, SIM_FMT_JSON };

/* One scenario's outcome. */
struct sim_row {
    const struct sim_scenario *sc; /* borrowed */
    struct sim_pred pr;            /* contention model (owned lat_ns) */
    struct herd_result herd;       /* herd model */
};

/* Prints every parameter of sc with its value, origin and note, as
 * '# '-prefixed lines. */
void sim_report_params(FILE *out, const struct sim_scenario *sc);

/* Header line (table: column titles; csv: header; json: nothing). */
void sim_report_header(FILE *out, int fmt, int model);

/* One row in the chosen format. */
void sim_report_row(FILE *out, int fmt, const struct sim_row *row);

/*
 * Draws the latency CDF of each contention row (and of each measured
 * sample in measured_path, lines "LABEL LATENCY_MS" or "LATENCY_MS", may be
 * NULL) into png_path with gnuplot.  Returns 0, or a negative code with err
 * set (gnuplot missing, unreadable file).
 */
int sim_report_plot(const struct sim_row *rows, size_t n,
                    const char *measured_path, const char *png_path,
                    struct mt_err *err);

#endif
