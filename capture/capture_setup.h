/*
 * capture_setup.h -- the process set-up of `mtrace capture` around a run:
 * signals, the descriptor limit, the PM QoS request of --cpu-dma-latency,
 * and the check that a --iface device exists.
 */
#ifndef MT_CAPTURE_SETUP_H
#define MT_CAPTURE_SETUP_H

#include <stdbool.h>

#include "core/pmqos.h"

/* SIGINT and SIGTERM stop the proxy, the sniffer or a recording import
 * cleanly (proxy_stop, sniff_stop, recdir_stop); SIGPIPE is ignored. */
void capture_setup_signals(void);

/* Raises the descriptor limit to the hard limit, at most 2^20 (the proxy
 * holds two per connection).  Failure is not an error: the limit stays. */
void capture_setup_nofile(void);

/* Whether libpcap lists a capture device of that name ("any" and "lo"
 * included): 1, 0, or -1 when the list cannot be read. */
int capture_setup_iface_known(const char *name);

/*
 * --cpu-dma-latency: takes the PM QoS request (us < 0: none) before
 * anything else is created, so that a refusal leaves no trace file.
 * Returns 0, or exit status 1 with one line on stderr.
 */
int capture_setup_hold_latency(struct pmqos *q, int us);

/* After the summary: what was held, and the bound the kernel applied at
 * the end (other holders may ask for less), unless quiet; then drops the
 * request.  Nothing when none was held. */
void capture_setup_release_latency(struct pmqos *q, bool quiet);

#endif
