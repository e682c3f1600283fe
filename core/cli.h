/*
 * cli.h -- what every subcommand's option parsing shares: overflow-checked
 * numbers and durations, the one usage-error line, and getopt's error
 * cases turned into that line.
 *
 * Exit statuses (DESIGN.md "CLI contract"): 0 success, 1 runtime failure,
 * 2 bad usage.  They are returned as such, never negated: a negative
 * return stays an error code (core/err.h).
 */
#ifndef MT_CLI_H
#define MT_CLI_H

#include <stdbool.h>
#include <stdint.h>

#define CLI_EXIT_OK 0
#define CLI_EXIT_FAIL 1
#define CLI_EXIT_USAGE 2

/*
 * Prints "mtrace CMD: MESSAGE; run 'mtrace CMD --help'" and a newline on
 * stderr (MESSAGE from fmt, cut at 512 bytes).  Returns CLI_EXIT_USAGE.
 */
int cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * The usage-error line for what getopt_long (opterr = 0, optstring
 * starting with ':') returned as c when it is ':' (a missing value) or '?'
 * (an unknown option, or a value given to a flag); reads optind, optopt
 * and argv.  Returns CLI_EXIT_USAGE.
 */
int cli_option_error(const char *cmd, int c, char **argv);

/*
 * The one TRACE operand left after getopt (argv[optind..argc)) into
 * *path.  Returns 0, or CLI_EXIT_USAGE with its line printed: "no trace
 * given; usage: SYNOPSIS" or "one trace at a time ('A' and 'B')".
 */
int cli_take_trace(const char *cmd, const char *synopsis, int argc, char **argv,
                   const char **path);

/* A decimal in [lo, hi], digits only (no sign, no space); false on junk,
 * overflow or range, *v untouched then. */
bool cli_parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *v);

/* cli_parse_u64's decimal, or hexadecimal after "0x" or "0X" (a seed, a
 * mask): "0x" then hex digits only; false on junk, overflow or range. */
bool cli_parse_u64_hex(const char *s, uint64_t lo, uint64_t hi, uint64_t *v);

/* A decimal int in [lo, hi], an optional leading '-'; false on junk,
 * overflow or range. */
bool cli_parse_int(const char *s, int lo, int hi, int *v);

/* A finite decimal in [lo, hi] (fractions and exponents allowed, no
 * sign, no leading space); false on junk, overflow or range. */
bool cli_parse_double(const char *s, double lo, double hi, double *v);

/*
 * A duration: a finite decimal in [lo, hi] of a unit of unit_ns
 * nanoseconds (1e6: milliseconds, 1e9: seconds), as cli_parse_double
 * takes it, into *ns rounded to the nearest nanosecond.  hi * unit_ns must
 * fit in 64 bits.  False on junk or range.
 */
bool cli_parse_duration_ns(const char *s, double lo, double hi, double unit_ns,
                           uint64_t *ns);

#endif
