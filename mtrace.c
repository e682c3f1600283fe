/*
 * mtrace.c -- argv dispatch only.  Each subcommand's CLI lives beside its
 * module (capture/capture_cli.c, replay/replay_cli.c, play/play_cli.c,
 * sim/sim_cli.c,
 * tools/dump_cli.c, tools/stats_cli.c).
 *
 * Exit status: 0 success, 1 runtime failure, 2 bad usage.
 */
#include <stdio.h>
#include <string.h>

#include "capture/capture_cli.h"
#include "play/play_cli.h"
#include "replay/replay_cli.h"
#include "sim/sim_cli.h"
#include "tools/dump_cli.h"
#include "tools/stats_cli.h"

struct subcommand {
    const char *name;
    int (*main)(int argc, char **argv);
    const char *summary;
};

static const struct subcommand subcommands[] = {
    {"capture", capture_cli_main,
     "record MongoDB wire traffic: as a proxy, or from pcap / a live "
     "interface"},
    {"replay", replay_cli_main,
     "a server that answers real drivers from a trace, with added delay"},
    {"play", play_cli_main,
     "send a trace's requests to a live server, on the recorded schedule "
     "or faster"},
    {"sim", sim_cli_main,
     "discrete-event simulator of client contention (GIL, threads, proxy)"},
    {"calibrate", sim_calibrate_cli_main,
     "measure host facts for the simulator (cores, GIL hand-off, wake-up)"},
    {"dump", dump_cli_main,
     "print a trace, one line or JSON object per message"},
    {"stats", stats_cli_main,
     "per-command counts and request->reply latency percentiles"},
};

static void
usage(FILE *out)
{
    fprintf(out, "usage: mtrace <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
        fprintf(out, "  %-10s %s\n", subcommands[i].name,
                subcommands[i].summary);
    fprintf(out, "\n'mtrace <command> --help' describes each command; "
                 "see also mtrace(1).\n");
}

int
main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("mtrace %s\n", MT_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
        if (strcmp(argv[1], subcommands[i].name) == 0)
            return subcommands[i].main(argc - 1, argv + 1);
    fprintf(stderr, "mtrace: unknown command '%s'; run 'mtrace --help'\n",
            argv[1]);
    return 2;
}
