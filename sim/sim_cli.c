/* sim_cli.c -- placeholder until the module lands. */
#include "sim_cli.h"

#include <stdio.h>

int
sim_cli_main(int argc, char **argv)
{
    (void)argc;
    fprintf(stderr, "mtrace %s: not built yet\n", argv[0]);
    return 1;
}

int
sim_calibrate_cli_main(int argc, char **argv)
{
    (void)argc;
    fprintf(stderr, "mtrace %s: not built yet\n", argv[0]);
    return 1;
}

