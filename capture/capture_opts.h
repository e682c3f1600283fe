/*
 * capture_opts.h -- the options of `mtrace capture`, parsed and checked.
 *
 * Three groups: the proxy's (with its TLS options), the sniffer's (pcap
 * and live), and the ones both take (-o, --quiet, --force, --zstd-level,
 * --redact, --cpu-dma-latency); --recording takes only -o, --zstd-level,
 * --redact, --quiet and --force.  Parsing fills struct capture_args;
 * checking then decides the mode and refuses options of the other one.
 * Every function returns an exit status as such (0 go on, 2 bad usage,
 * its one line printed), never a negated one.
 */
#ifndef MT_CAPTURE_OPTS_H
#define MT_CAPTURE_OPTS_H

#include <stdbool.h>

#include "core/redact.h"
#include "proxy.h"
#include "sniff.h"

struct capture_args {
    struct proxy_opts px;
    struct sniff_opts sn;
    struct redact_cfg redact;
    bool redacting;        /* --redact given */
    const char *recording; /* --recording DIR|FILE */
    const char *listen, *target;
    bool proxy_only;    /* a proxy-only option was given */
    bool sniff_only;    /* a pcap/live-only option was given */
    int dma_latency_us; /* --cpu-dma-latency; -1: not given */
};

/* The defaults: listen 127.0.0.1:28017, target 127.0.0.1:27017, 10000
 * connections, a 100 us spin window, the default message timeout, no
 * --cpu-dma-latency. */
void capture_opts_init(struct capture_args *a);

/*
 * Parses argv (argv[0] the subcommand) into a and *out (-o).  True: go on
 * to capture_opts_check.  False: exit with *status, 0 after --help (the
 * usage printed), 2 on bad usage (its line printed).
 */
bool capture_opts_parse(int argc, char **argv, struct capture_args *a,
                        const char **out, int *status);

/*
 * Decides the mode from a: pcap / live (a->sn ready, out_path set) or
 * proxy (addresses resolved into a->px, out_path set), refusing options of
 * the other mode.  Returns 0 or exit status 2 (its line printed).  May
 * block on DNS for a --listen or --target host name.
 */
int capture_opts_check(struct capture_args *a, const char *out);

#endif
