/*
 * trace_read.h -- the trace reader.  Its API is declared in trace.h with the
 * writer's (one trace module for callers); trace_read.c implements it.
 */
#ifndef MT_TRACE_READ_H
#define MT_TRACE_READ_H

#include <stdbool.h>

#include "trace.h"

/*
 * True when the header frame was damaged and the reader went on with the
 * later frames: trace_reader_header() then holds no recorded values (its
 * strings read "(header lost)", its numbers are 0) and trace_reader_next
 * returns no header record.  docs/trace-format.md section 5.
 */
bool trace_reader_header_lost(const struct trace_reader *r);

#endif
