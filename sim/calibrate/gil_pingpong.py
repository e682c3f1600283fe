#!/usr/bin/python3
"""gil_pingpong.py -- the GIL facts of mtrace sim, measured in CPython itself
(run by `mtrace calibrate`).

Prints "key value" lines:
  py_version          sys.version of this interpreter
  gil                 1 if this build has a GIL (sys._is_gil_enabled() on 3.13+)
  switch_interval_us  sys.getswitchinterval() in microseconds
  gil_handoff_us      the GIL hand-off, two threads in turns: thread A
                      releases a threading.Lock that thread B is blocked on,
                      then runs Python for SPIN_US (1 ms, under the 5 ms
                      switch interval, so no drop request is made), while B,
                      woken, waits for the GIL in take_gil
                      (Python/ceval_gil.c: COND_TIMED_WAIT on gil->cond, its
                      core idle).  A stamps perf_counter() and blocks on a
                      second lock, which drops the GIL (drop_gil:
                      COND_SIGNAL); B records perf_counter() - stamp as soon
                      as it runs Python.  Mean of ROUNDS less the top 1 %
  gil_handoff_cv      their coefficient of variation
Usage: gil_pingpong.py [ROUNDS, default 1000]
"""
import statistics
import sys
import threading
import time

SPIN_US = 1000.0


def spin_for(us):
    """Python bytecode for us microseconds (the GIL held throughout)."""
    end = time.perf_counter() + us * 1e-6
    while time.perf_counter() < end:
        pass


def gil_handoff(rounds):
    """Samples in s; see gil_handoff_us.  On a host so busy that B's wake-up
    takes longer than A's spin, B did not wait in take_gil and a sample is
    its late wake-up instead (a warning in mtrace calibrate's output when
    the mean is over SPIN_US / 10)."""
    go = threading.Lock()
    done = threading.Lock()
    go.acquire()
    done.acquire()
    stamp = [0.0]
    xs = []

    def b():
        for _ in range(rounds):
            go.acquire()
            xs.append(time.perf_counter() - stamp[0])
            done.release()

    t = threading.Thread(target=b)
    t.start()
    for _ in range(rounds):
        go.release()
        spin_for(SPIN_US)
        stamp[0] = time.perf_counter()
        done.acquire()
    t.join()
    return xs


def trim_mean_cv(xs):
    """Mean and cv (capped at 10) of xs less their top 1 % (a sample that
    waited for a core other processes held is not the mechanism's); also
    lock_contend.py's."""
    xs = sorted(xs)
    xs = xs[:len(xs) - len(xs) // 100]
    m = statistics.mean(xs)
    return m, min(statistics.pstdev(xs) / m, 10.0) if m > 0 else 0.0


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    gil = getattr(sys, "_is_gil_enabled", lambda: True)()
    print("py_version", sys.version.split()[0])
    print("gil", 1 if gil else 0)
    print("switch_interval_us", "%.1f" % (sys.getswitchinterval() * 1e6))
    gil_handoff(max(10, rounds // 10))  # warm-up
    m, cv = trim_mean_cv(gil_handoff(rounds))
    print("gil_handoff_us", "%.3f" % (m * 1e6))
    print("gil_handoff_cv", "%.3f" % cv)


if __name__ == "__main__":
    main()
