/*
 * compare.h -- `mtrace stats --compare A.zst B.zst [--json]`: the same
 * recorded-vs-played comparison `mtrace play` prints, for any two traces.
 */
#ifndef MT_COMPARE_H
#define MT_COMPARE_H

#include <stdbool.h>

/* True when argv (stats' arguments) asks for --compare. */
bool compare_requested(int argc, char **argv);

/* Exit status: 0 both traces read whole, 1 one is unreadable or
 * damaged (what could be read is compared), 2 bad usage. */
int compare_cli_main(int argc, char **argv);

#endif
