/*
 * play_cli.h -- `mtrace play` command line.
 */
#ifndef MT_PLAY_CLI_H
#define MT_PLAY_CLI_H

/* Exit status: 0 success, 1 runtime failure, 2 bad usage. */
int play_cli_main(int argc, char **argv);

#endif
