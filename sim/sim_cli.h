/*
 * sim_cli.h -- command-line entry points of `mtrace sim` and
 * `mtrace calibrate` (sim_cli.c); options in their --help and in
 * docs/sim-model.md.
 */
#ifndef MT_SIM_CLI_H
#define MT_SIM_CLI_H

/* `mtrace sim`: argv[0] is "sim".  Returns the exit status (0 ok, 1 runtime
 * failure, 2 bad usage), with a one-line message on stderr on failure. */
int sim_cli_main(int argc, char **argv);

/* `mtrace calibrate`: argv[0] is "calibrate".  Same exit statuses. */
int sim_calibrate_cli_main(int argc, char **argv);

#endif
