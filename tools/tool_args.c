/*
 * tool_args.c -- the options of dump and stats (see tool_args.h).
 */
#include "tool_args.h"

#include <getopt.h>
#include <stdint.h>
#include <string.h>

#include "core/cli.h"
#include "core/err.h"
#include "core/trace.h"

enum { OPT_JSON = 256, OPT_TOP };

/* The options into *a; true to go on to the trace, false to exit with
 * *status. */
static bool
parse(const char *cmd, const char *synopsis, void (*usage)(FILE *f),
      size_t top_max, int argc, char **argv, struct tool_args *a, int *status)
{
    static const struct option all[] = {
        {"json", no_argument, NULL, OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {"top", required_argument, NULL, OPT_TOP},
        {NULL, 0, NULL, 0},
    };
    static const struct option no_top[] = {
        {"json", no_argument, NULL, OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    uint64_t n;
    int c;

    memset(a, 0, sizeof(*a));
    opterr = 0;
    optind = 1;
    *status = CLI_EXIT_USAGE;
    while ((c = getopt_long(argc, argv, ":h", top_max > 0 ? all : no_top,
                            NULL)) != -1) {
        switch (c) {
        case 'h':
            usage(stdout);
            *status = CLI_EXIT_OK;
            return false;
        case OPT_JSON:
            a->json = true;
            break;
        case OPT_TOP:
            if (!cli_parse_u64(optarg, 1, top_max, &n)) {
                cli_usage_error(cmd,
                                "--top takes a number of exchanges from 1 "
                                "to %zu",
                                top_max);
                return false;
            }
            a->top = (size_t)n;
            break;
        default:
            cli_option_error(cmd, c, argv);
            return false;
        }
    }
    *status = cli_take_trace(cmd, synopsis, argc, argv, &a->path);
    return *status == 0;
}

/* See tool_args.h. */
struct trace_reader *
tool_args_open(const char *cmd, const char *synopsis, void (*usage)(FILE *f),
               size_t top_max, int argc, char **argv, struct tool_args *a,
               int *status)
{
    struct trace_reader *r;
    struct mt_err err;

    if (!parse(cmd, synopsis, usage, top_max, argc, argv, a, status))
        return NULL;
    r = trace_reader_open_arg(a->path, &err);
    if (r == NULL) {
        fprintf(stderr, "mtrace %s: %s: %s\n", cmd, a->path, err.msg);
        *status = CLI_EXIT_FAIL;
    }
    return r;
}
