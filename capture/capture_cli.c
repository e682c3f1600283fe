/*
 * capture_cli.c -- `mtrace capture`: the entry point of both capture modes.
 *
 *   proxy:  mtrace capture [--listen H:P] [--target H:P] -o OUT [--delay-ms X]
 *                          [--max-conns N] [--threads N] [--rt-prio N]
 *                          [--cpu-dma-latency US] [--quiet] [--force]
 *   pcap:   mtrace capture --pcap FILE [--port N]... [--filter BPF] -o OUT
 *   live:   mtrace capture --iface IF [--port N]... [--filter BPF]
 *                          [--duration S] [--count N]
 *                          [--cpu-dma-latency US] -o OUT
 *   recording: mtrace capture --recording DIR|FILE -o OUT
 *
 * This file ties the pieces together: capture_opts.c parses and checks
 * the options, capture_usage.c holds the --help text, capture_setup.c the
 * process set-up (signals, descriptor limit, PM QoS); the proxy runs in
 * capture/proxy.c, pcap and live capture in capture/sniff.c, the import of
 * mongod's recordings in capture/recdir.c.  SIGINT/SIGTERM
 * end either cleanly.  Exit status: 0 success, 1 runtime failure, 2 bad usage
 * (each with a one-line message).
 */
#include "capture_cli.h"

#include <errno.h>
#include <stdio.h>

#include "core/err.h"
#include "core/pmqos.h"
#include "capture_opts.h"
#include "capture_setup.h"
#include "proxy.h"
#include "recdir.h"
#include "sniff.h"

/* See capture_cli.h. */
int
capture_cli_main(int argc, char **argv)
{
    struct capture_args a;
    struct mt_err err = {0};
    struct pmqos q;
    const char *out = NULL;
    int rc;

    capture_opts_init(&a);
    if (!capture_opts_parse(argc, argv, &a, &out, &rc))
        return rc;
    if ((rc = capture_opts_check(&a, out)) != 0)
        return rc;
    if (a.sn.iface != NULL && capture_setup_iface_known(a.sn.iface) == 0) {
        /* A runtime condition, like a missing --pcap file: exit 1. */
        fprintf(stderr,
                "mtrace capture: --iface %s: no such capture device "
                "(see 'ip link')\n",
                a.sn.iface);
        return 1;
    }
    pmqos_init(&q);
    if (capture_setup_hold_latency(&q, a.dma_latency_us) != 0)
        return 1;
    capture_setup_signals();
    if (a.recording != NULL) {
        rc = recdir_import(
            &(struct recdir_opts){a.recording, out, a.sn.trace_flags,
                                  a.sn.zstd_level, a.sn.quiet,
                                  a.redacting ? &a.redact : NULL},
            &err);
    } else if (a.sn.out_path != NULL) {
        rc = sniff_run(&a.sn, &err);
    } else {
        capture_setup_nofile();
        rc = proxy_run(&a.px, &err);
    }
    capture_setup_release_latency(&q, a.px.quiet || rc < 0);
    if (rc < 0) {
        if (rc == -EEXIST)
            fprintf(stderr,
                    "mtrace capture: %s exists; pass --force to "
                    "overwrite it\n",
                    out);
        else
            fprintf(stderr, "mtrace capture: %s\n",
                    err.msg[0] ? err.msg : mt_strerror(rc));
        return rc == MT_EUSAGE ? 2 : 1; /* e.g. a bad --filter */
    }
    return 0;
}
