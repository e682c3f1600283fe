/*
 * replay_summary.h -- the exit summary of `mtrace replay`: the merged
 * statistics of every loop (replay_stats.h struct replay_stats) as text lines
 * for stderr and as the one JSON object of --summary-json.  docs/replay.md
 * ("Statistics") describes every field.
 */
#ifndef MT_REPLAY_SUMMARY_H
#define MT_REPLAY_SUMMARY_H

#include <stdbool.h>
#include <stdio.h>

#include "conn.h"

/* What the PM QoS request was: ours (-1: none) and the bound the kernel
 * applied at the end of serving (the smallest of every holder's; -1:
 * unreadable, e.g. without root). */
struct replay_pmqos_seen {
    int held_us;
    int kernel_us;
};

/* The summary lines of st to f; the authentication line when auth (or
 * when an authentication was refused), the TLS line when tls
 * (--tls-cert). */
void replay_summary_print(FILE *f, const struct replay_stats *st, bool auth,
                          bool tls);

/* The CPU wake-up latency line of p to f. */
void replay_summary_print_pmqos(FILE *f, const struct replay_pmqos_seen *p);

/*
 * Writes st and p to f (opened at start for --summary-json path) as one
 * JSON object and a newline, and closes f; "tls" is null unless tls
 * (--tls-cert).  0, or -1 when a write or the close failed (logged with
 * path).
 */
int replay_summary_json(FILE *f, const char *path,
                        const struct replay_stats *st, bool tls,
                        const struct replay_pmqos_seen *p);

#endif
