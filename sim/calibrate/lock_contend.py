#!/usr/bin/python3
"""lock_contend.py -- the threading.Lock fact of mtrace sim's driver-lock
component, measured in CPython itself (run by `mtrace calibrate`).

N threads each loop: W us of work, then a section on one shared
threading.Lock held S us.  Each acquire is made the way CPython's
lock.acquire() makes it (Modules/_threadmodule.c acquire_timed): a try with
the GIL held (acquire(False)), and only when that fails the blocking
acquire, which releases the GIL, waits in the OS, and takes the GIL back
holding the lock.  The holder stamps perf_counter() just before release();
the next holder reads the stamp as soon as its acquire returns.  A
hand-over is counted when the next holder's try had failed (it was blocked
when the lock was released).

Prints "key value" lines:
  py_version        sys.version of this interpreter
  lock_wake_us      N = 2; the work and the hold are hashlib.sha256 over a
                    buffer sized for W = 50 and S = 150 us (CPU with the
                    GIL released, as os.urandom inside pymongo 3.11's
                    Topology._lock is), so the GIL is free at a release and
                    the lock is contended (both longer than a GIL
                    hand-off: with work and hold shorter than the waiter's
                    wake-up, the thread that dropped the GIL for them takes
                    it back first and the other never runs beside it): release() -> the blocked acquirer
                    running Python holding the lock, mean of the hand-overs
                    less their top 1 %.  That is the OS wake-up of a lock
                    waiter (Python/thread_pthread.h: sem_post ->
                    sem_clockwait's return) and an uncontended take_gil
  lock_wake_cv      their coefficient of variation
  lock_wake_n       hand-overs measured (the run is repeated, up to 5 times,
                    until there are 200)
  lock_blocked      share of acquires whose try failed, same run
  lock4_wake_us     the same with N = 4 (on 2 cores: the woken waiter may
                    also queue for a core), diagnostic
  lock_pp_wake_us   2 threads in strict turns: the waiter blocked ~200 us,
                    the releaser blocks on a second lock at once (its core
                    free), diagnostic
  for N in 2 and 4, W = 50 us of Python (GIL held) between sections held
  S = 150 us with the GIL released (the convoy: a woken waiter holds the
  lock while it waits for the GIL), diagnostics:
  convoyN_blocked   share of acquires that blocked
  convoyN_handover_us  median release() -> next holder running
  convoyN_cycle_us  wall time per section, all threads
Usage: lock_contend.py [ITERATIONS per thread, default 1000]
"""
import hashlib
import statistics
import sys
import threading
import time

from gil_pingpong import trim_mean_cv  # beside this file

WORK_US = 50.0
HOLD_US = 150.0


def spin_py(n):
    """Python bytecode work, GIL held: n loop iterations."""
    acc = 0
    for i in range(n):
        acc += i & 7
    return acc


def median_us(fn, reps=21):
    xs = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        xs.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(xs)


def py_work(us):
    """A callable doing about us microseconds of Python (GIL held)."""
    n = 20000
    per = median_us(lambda: spin_py(n), 5) / n
    k = max(1, int(us / per))
    return lambda: spin_py(k)


def sha_work(us):
    """A callable doing about us microseconds of hashlib.sha256 with the GIL
    released (CPython releases it for data of 2 KiB and more)."""
    big = bytes(1 << 20)
    ns_per_byte = median_us(lambda: hashlib.sha256(big).digest(), 5) * 1e3 / len(big)
    buf = bytes(max(4096, int(us * 1e3 / ns_per_byte)))
    return lambda: hashlib.sha256(buf).digest()


def contend(nthreads, iters, work, hold):
    """N threads, `iters` sections each: (hand-over samples in s, share of
    acquires that blocked, wall time per section in s)."""
    lk = threading.Lock()
    last_rel = [0.0]
    hand = []
    blocked = [0]
    go = threading.Barrier(nthreads + 1)

    def worker():
        go.wait()
        mine = []
        nb = 0
        for _ in range(iters):
            work()
            if not lk.acquire(False):
                lk.acquire()
                mine.append(time.perf_counter() - last_rel[0])
                nb += 1
            hold()
            last_rel[0] = time.perf_counter()
            lk.release()
        hand.extend(mine)
        blocked[0] += nb

    ths = [threading.Thread(target=worker) for _ in range(nthreads)]
    for t in ths:
        t.start()
    go.wait()
    t0 = time.perf_counter()
    for t in ths:
        t.join()
    wall = time.perf_counter() - t0
    return hand, blocked[0] / (nthreads * iters), wall / (nthreads * iters)


def pp_wake(rounds=2000):
    """lock_pp_wake_us: see the module doc (samples in s)."""
    lk = threading.Lock()
    back = threading.Lock()
    lk.acquire()
    back.acquire()
    stamp = [0.0]
    xs = []

    def waiter():
        for _ in range(rounds):
            if not lk.acquire(False):
                lk.acquire()
            xs.append(time.perf_counter() - stamp[0])
            back.release()

    t = threading.Thread(target=waiter)
    t.start()
    for _ in range(rounds):
        time.sleep(0.0002)
        stamp[0] = time.perf_counter()
        lk.release()     # the waiter takes lk and keeps it: held again
        back.acquire()   # until the waiter has run
    t.join()
    return xs


def main():
    iters = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    w_sha, s_sha, w_py = sha_work(WORK_US), sha_work(HOLD_US), py_work(WORK_US)
    print("py_version", sys.version.split()[0])
    contend(2, max(10, iters // 10), w_sha, s_sha)  # warm-up
    hand, blks = [], []
    for _ in range(5):  # on a busy host the threads seldom overlap: run longer
        h, b, _ = contend(2, iters, w_sha, s_sha)
        hand += h
        blks.append(b)
        if len(hand) >= 200:
            break
    blk = statistics.mean(blks)
    if len(hand) < 20:
        print("# lock_contend: only %d contended hand-overs" % len(hand), file=sys.stderr)
        sys.exit(1)
    m, cv = trim_mean_cv(hand)
    print("lock_wake_us", "%.3f" % (m * 1e6))
    print("lock_wake_cv", "%.3f" % cv)
    print("lock_wake_n", len(hand))
    print("lock_blocked", "%.4f" % blk)
    hand4, _, _ = contend(4, iters // 2, w_sha, s_sha)
    if hand4:
        print("lock4_wake_us", "%.3f" % (trim_mean_cv(hand4)[0] * 1e6))
    print("lock_pp_wake_us", "%.3f" % (trim_mean_cv(pp_wake())[0] * 1e6))
    for n in (2, 4):
        h, b, cyc = contend(n, iters // n, w_py, s_sha)
        print("convoy%d_blocked" % n, "%.4f" % b)
        print("convoy%d_handover_us" % n, "%.3f" % (statistics.median(h) * 1e6 if h else 0.0))
        print("convoy%d_cycle_us" % n, "%.3f" % (cyc * 1e6))


if __name__ == "__main__":
    main()
