/* replay_cli.c -- placeholder until the module lands. */
#include "replay_cli.h"

#include <stdio.h>

int
replay_cli_main(int argc, char **argv)
{
    (void)argc;
    fprintf(stderr, "mtrace %s: not built yet\n", argv[0]);
    return 1;
}

