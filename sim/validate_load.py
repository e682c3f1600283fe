#!/usr/bin/env python3
"""validate_load.py [--seconds S] [--samples N]: how many tasks other than
this one are runnable (state R in /proc/*/task/*/stat), sampled N times over
S seconds; prints `others=MEAN max=MAX`.

sim/validate.sh calls it between repetitions, when none of its own
processes runs (mtrace replay waits in epoll, the shell in wait), so the
count is other jobs' demand for the CPUs.  The 1-minute load average, by
contrast, still carries validate.sh's own calibration and earlier
repetitions for minutes (it decays with a 1-minute time constant)."""
import argparse
import os
import time


def runnable_others(me):
    n = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == me:
            continue
        try:
            tids = os.listdir("/proc/%s/task" % pid)
        except OSError:
            continue
        for tid in tids:
            try:
                with open("/proc/%s/task/%s/stat" % (pid, tid)) as f:
                    st = f.read()
            except OSError:
                continue
            # the state follows the command name's closing parenthesis
            if st[st.rfind(")") + 2:st.rfind(")") + 3] == "R":
                n += 1
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--samples", type=int, default=20)
    a = ap.parse_args()
    me, counts = os.getpid(), []
    for _ in range(max(1, a.samples)):
        counts.append(runnable_others(me))
        time.sleep(a.seconds / max(1, a.samples))
    print("others=%.2f max=%d" % (sum(counts) / len(counts), max(counts)))


if __name__ == "__main__":
    main()
