/*
 * trace_read.h -- the trace reader.  Its API is declared in trace.h with the
 * writer's (one trace module for callers); trace_read.c implements it.
 */
#ifndef MT_TRACE_READ_H
#define MT_TRACE_READ_H

#include "trace.h"

#endif
