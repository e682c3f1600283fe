/*
 * capture_usage.h -- the --help text of `mtrace capture`.
 */
#ifndef MT_CAPTURE_USAGE_H
#define MT_CAPTURE_USAGE_H

#include <stdio.h>

/* Writes the usage and every option of the three modes (proxy, pcap,
 * live) to out: what `mtrace capture --help` prints.  Each option of
 * capture_opts.c is in it (tests/integration/test_man_page.sh). */
void capture_usage_print(FILE *out);

#endif
