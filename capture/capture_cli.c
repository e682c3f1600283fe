/* capture_cli.c -- placeholder until the module lands. */
#include "capture_cli.h"

#include <stdio.h>

int
capture_cli_main(int argc, char **argv)
{
    (void)argc;
    fprintf(stderr, "mtrace %s: not built yet\n", argv[0]);
    return 1;
}

