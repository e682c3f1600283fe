/*
 * recdir.h -- `mtrace capture --recording DIR|FILE`: imports a mongod
 * traffic recording into a trace (docs/recording.md).
 */
#ifndef MT_RECDIR_H
#define MT_RECDIR_H

#include <stdbool.h>

#include "core/err.h"

struct redact_cfg;

struct recdir_opts {
    const char *in_path;  /* borrowed: a recording directory or one file */
    const char *out_path; /* borrowed: the trace to create */
    unsigned trace_flags; /* TRACE_W_FORCE */
    int zstd_level;       /* 0: TRACE_ZSTD_LEVEL_IMPORT */
    bool quiet;           /* no summary on stderr */
    const struct redact_cfg *redact; /* borrowed; NULL: no redaction */
};

/*
 * The whole import: files of a directory (*.bin, in name order, as the
 * server's reader sorts them) or one file; checksum.txt checked where it
 * has an entry.  Returns 0 when everything was imported; MT_ECORRUPT when
 * the trace was written but problems were reported (err says how many);
 * another negative code when no trace could be written (err says why;
 * -EEXIST when the output exists).
 */
int recdir_import(const struct recdir_opts *o, struct mt_err *err);

/* From a signal handler: recdir_import stops after the current record,
 * closes the trace (every record so far kept) and returns MT_ECORRUPT. */
void recdir_stop(void);

#endif
