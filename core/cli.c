/*
 * cli.c -- numbers, durations and usage errors of the command lines (see
 * cli.h).
 */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

int
cli_usage_error(const char *cmd, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "mtrace %s: %s; run 'mtrace %s --help'\n", cmd, msg, cmd);
    return CLI_EXIT_USAGE;
}

int
cli_option_error(const char *cmd, int c, char **argv)
{
    const char *arg = optind > 0 ? argv[optind - 1] : "";

    if (c == ':')
        return cli_usage_error(cmd, "option '%s' needs a value", arg);
    if (optopt > 0 && optopt < 256)
        return cli_usage_error(cmd, "unknown option '-%c'", optopt);
    return cli_usage_error(cmd, "%s option '%s'",
                           optopt != 0 ? "no value allowed for" : "unknown",
                           arg);
}

int
cli_take_trace(const char *cmd, const char *synopsis, int argc, char **argv,
               const char **path)
{
    if (optind >= argc) {
        fprintf(stderr, "mtrace %s: no trace given; usage: %s\n", cmd,
                synopsis);
        return CLI_EXIT_USAGE;
    }
    if (argc - optind > 1)
        return cli_usage_error(cmd, "one trace at a time ('%s' and '%s')",
                               argv[optind], argv[optind + 1]);
    *path = argv[optind];
    return 0;
}

bool
cli_parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *v)
{
    char *end;
    unsigned long long x;

    if (s[0] < '0' || s[0] > '9')
        return false;
    errno = 0;
    x = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || x < lo || x > hi)
        return false;
    *v = x;
    return true;
}

bool
cli_parse_u64_hex(const char *s, uint64_t lo, uint64_t hi, uint64_t *v)
{
    char *end;
    unsigned long long x;

    if (s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
        return cli_parse_u64(s, lo, hi, v);
    if (!isxdigit((unsigned char)s[2]))
        return false;
    errno = 0;
    x = strtoull(s + 2, &end, 16);
    if (errno != 0 || *end != '\0' || x < lo || x > hi)
        return false;
    *v = x;
    return true;
}

bool
cli_parse_int(const char *s, int lo, int hi, int *v)
{
    char *end;
    long x;

    if (s[0] != '-' && (s[0] < '0' || s[0] > '9'))
        return false;
    errno = 0;
    x = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || x < lo || x > hi)
        return false;
    *v = (int)x;
    return true;
}

bool
cli_parse_double(const char *s, double lo, double hi, double *v)
{
    char *end;
    double x;

    if (s[0] == '\0' || s[0] == '-' || s[0] == '+' || s[0] == ' ')
        return false;
    errno = 0;
    x = strtod(s, &end);
    if (errno != 0 || *end != '\0' || !isfinite(x) || x < lo || x > hi)
        return false;
    *v = x;
    return true;
}

bool
cli_parse_duration_ns(const char *s, double lo, double hi, double unit_ns,
                      uint64_t *ns)
{
    double x;

    if (!cli_parse_double(s, lo, hi, &x))
        return false;
    *ns = (uint64_t)llround(x * unit_ns);
    return true;
}
