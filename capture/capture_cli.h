#ifndef MT_CAPTURE_CLI_H
#define MT_CAPTURE_CLI_H

/* Entry point of 'mtrace ...'; argv[0] is the subcommand name. Returns the exit
 * status (0, 1 runtime failure, 2 usage). */
int capture_cli_main(int argc, char **argv);

#endif
