/*
 * calibrate.h -- `mtrace calibrate`: measures the host facts the simulator
 * needs and writes them as a host facts file (scenario format, origin
 * "measured"): cores, wake-up latency of a blocked thread, CPU of a loopback
 * syscall pair, the GIL hand-off of /usr/bin/python3 (and of a free-threaded
 * python3.13t when one exists).  Measurement code is in sim/calibrate/
 * (gil_pingpong.py) and here; docs/sim-model.md explains each.
 */
#ifndef MT_SIM_CALIBRATE_H
#define MT_SIM_CALIBRATE_H

/* CLI entry: argv[0] is "calibrate".  Returns the exit status. */
int sim_calibrate_main(int argc, char **argv);

#endif
