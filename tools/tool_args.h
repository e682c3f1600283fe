/*
 * tool_args.h -- the command line `mtrace dump` and `mtrace stats` share:
 * --json, --help, stats' --top N, and the one TRACE operand ("-" for
 * standard input, core/trace.h's trace_reader_open_arg).
 */
#ifndef MT_TOOL_ARGS_H
#define MT_TOOL_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct tool_args {
    bool json;        /* --json */
    size_t top;       /* --top N; 0 when not given */
    const char *path; /* borrowed: argv's TRACE operand */
};

struct trace_reader;

/*
 * Parses argv (getopt_long from argv[1]) into *a: --json, --help (usage
 * printed to stdout) and, when top_max > 0, --top N in 1..top_max; then
 * the one TRACE operand (synopsis goes into the usage line when it is
 * missing), which it opens.  Returns the reader (the caller's:
 * trace_reader_free), or NULL to exit with *status: 0 after --help, 1 when
 * the trace cannot be opened ("mtrace CMD: PATH: why" on stderr), 2 bad
 * usage (core/cli.h's one line printed for cmd).
 */
struct trace_reader *tool_args_open(const char *cmd, const char *synopsis,
                                    void (*usage)(FILE *f), size_t top_max,
                                    int argc, char **argv, struct tool_args *a,
                                    int *status);

#endif
