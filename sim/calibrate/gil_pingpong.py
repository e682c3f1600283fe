#!/usr/bin/python3
"""gil_pingpong.py -- host facts for mtrace sim, measured in CPython itself.

Prints "key value" lines:
  py_version       sys.version of this interpreter
  gil              1 if this build has a GIL (sys._is_gil_enabled() on 3.13+)
  switch_interval_us  sys.getswitchinterval() in microseconds
  handoff_us       half round trip of two threads passing control through two
                   threading.Lock objects (each blocking acquire releases the
                   GIL, and the woken thread must take it back: one OS wake-up
                   plus one GIL hand-off), minus the CPU of the same lock
                   operations done by one thread
  handoff_cv       coefficient of variation of the half round trip (batches)
  handoff_cold_us  the same hand-off when the woken thread has been blocked
                   200 us (its core may idle, as a GIL waiter's does): time
                   from lock.release() in one thread to the other thread
                   running Python; mean of the samples less their top 1 %
                   (robust to rare huge samples on a shared machine)
  handoff_cold_cv  their coefficient of variation
  loop_us          that single-thread lock-operation CPU per half round trip
  switch_cpu_us    4 threads each loop (a fixed ~0.2 ms Python workload, then
                   time.sleep(0.0002), which drops the GIL): median thread
                   CPU (time.thread_time) of the workload under this
                   contention minus its median when one thread runs it: the
                   CPU cost of taking the GIL over from another thread
                   (cache and TLB refills after migrations)
  handoff_contended_us  in that run, median time from one holder's end of
                   workload to the next holder's start (GIL idle gap)
  pp_switch_cpu_us the same CPU difference in a strict 2-thread lock
                   ping-pong (threads stay on their cores: usually ~0)
  switch_stretch   GIL take-over stretch: 3 threads each loop (workload(),
                   then time.sleep(0.0003), which drops the GIL: no drop
                   request, the holder keeps the GIL for the whole burst);
                   mean wall time of one burst (perf_counter around it,
                   top 1 % left out) under that contention divided by the
                   same with one thread, minus 1.  Phases alternate (alone,
                   contended) 7 times; the median of the 7 ratios (robust to
                   CPU-speed drift and other load between phases).  With one
                   thread no other thread runs between its bursts; with 3
                   another one always has: the ratio is what taking the GIL
                   over from another thread costs the next burst (cache and
                   TLB refills, the holder preempted by threads woken while
                   it holds the GIL)
  switch_stretch_min / _max  the smallest and largest of the 7 ratios, minus 1
  cpu_loop_us      a fixed pure-Python workload (dict building and attribute
                   access, similar in kind to BSON encode/decode) in microseconds;
                   the ratio between two interpreters is a free-threaded slowdown
Usage: gil_pingpong.py [ROUNDS]
"""
import statistics
import sys
import threading
import time

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
BATCH = 200


def pingpong(rounds):
    a = threading.Lock()
    b = threading.Lock()
    a.acquire()
    b.acquire()
    batches = []

    def other():
        for _ in range(rounds):
            b.acquire()
            a.release()

    t = threading.Thread(target=other)
    t.start()
    for _ in range(rounds // BATCH):
        t0 = time.perf_counter()
        for _ in range(BATCH):
            b.release()
            a.acquire()
        batches.append((time.perf_counter() - t0) / (2 * BATCH))
    t.join()
    return batches


def cold_handoff(rounds=2000):
    """Thread A sleeps 200 us, stamps perf_counter(), releases b and blocks
    on a; thread B, blocked on b, records perf_counter() - stamp."""
    a = threading.Lock()
    b = threading.Lock()
    a.acquire()
    b.acquire()
    stamp = [0.0]
    samples = []

    def other():
        for _ in range(rounds):
            b.acquire()
            samples.append(time.perf_counter() - stamp[0])
            a.release()

    t = threading.Thread(target=other)
    t.start()
    for _ in range(rounds):
        time.sleep(0.0002)
        stamp[0] = time.perf_counter()
        b.release()
        a.acquire()
    t.join()
    return samples


def workload(n=300):
    acc = 0
    for i in range(n):
        d = {"_id": "test-doc-1", "value": i, "find": "test_col", "$db": "benchmark_db",
             "filter": {"_id": "test-doc-1"}, "limit": 1, "singleBatch": True}
        acc += len(d) + len("%s.%s" % (d["$db"], d["find"])) + len(repr(d["filter"]))
    return acc


def contended(T=4, K=300):
    """Median CPU of workload() alone and under T-thread contention, and the
    median gap between consecutive GIL holders (see the module doc)."""
    ev = []

    def w():
        for _ in range(K):
            a = time.perf_counter()
            c0 = time.thread_time()
            workload()
            c1 = time.thread_time()
            ev.append((a, time.perf_counter(), c1 - c0))
            time.sleep(0.0002)

    alone = []
    for _ in range(K):
        c0 = time.thread_time()
        workload()
        alone.append(time.thread_time() - c0)
        time.sleep(0.0002)
    ths = [threading.Thread(target=w) for _ in range(T)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    ev.sort()
    gaps = [ev[i + 1][0] - ev[i][1] for i in range(len(ev) - 1)]
    return (statistics.median(c for _, _, c in ev) - statistics.median(alone),
            statistics.median(gaps), statistics.median(alone))


def switch_cpu(rounds=2000):
    """Median thread CPU of workload() right after a GIL hand-off from a
    thread that also ran it, minus its median CPU run back to back."""
    a = threading.Lock()
    b = threading.Lock()
    a.acquire()
    b.acquire()
    after = []

    def other():
        for _ in range(rounds):
            b.acquire()
            t0 = time.thread_time()
            workload()
            after.append(time.thread_time() - t0)
            a.release()

    t = threading.Thread(target=other)
    t.start()
    for _ in range(rounds):
        workload()
        b.release()
        a.acquire()
    t.join()
    alone = []
    for _ in range(rounds):
        t0 = time.thread_time()
        workload()
        alone.append(time.thread_time() - t0)
    return statistics.median(after) - statistics.median(alone), statistics.median(alone)


def _tmean(x):
    x = sorted(x)
    x = x[:len(x) - len(x) // 100]
    return statistics.mean(x)


def _bursts(T, K):
    """T threads x K iterations of (workload(), time.sleep(0.0003)): wall
    time of each burst but the first of each thread."""
    out = []
    lock = threading.Lock()

    def w():
        t = []
        for _ in range(K):
            a = time.perf_counter()
            workload()
            t.append(time.perf_counter() - a)
            time.sleep(0.0003)
        with lock:
            out.extend(t[1:])

    ths = [threading.Thread(target=w) for _ in range(T)]
    for x in ths:
        x.start()
    for x in ths:
        x.join()
    return out


def switch_stretch(T=3, K=150, phases=7):
    """See switch_stretch in the module doc: (median, min, max) of the
    per-phase ratio contended/alone, minus 1."""
    ratios = []
    for _ in range(phases):
        alone = _tmean(_bursts(1, K))
        cont = _tmean(_bursts(T, K))
        ratios.append(cont / alone - 1.0)
    return statistics.median(ratios), min(ratios), max(ratios)


def lock_loop(rounds):
    a = threading.Lock()
    b = threading.Lock()
    t0 = time.perf_counter()
    for _ in range(rounds):
        a.acquire()
        b.acquire()
        a.release()
        b.release()
    return (time.perf_counter() - t0) / (2 * rounds)


def cpu_loop(n=20000):
    t0 = time.perf_counter()
    acc = 0
    for i in range(n):
        d = {"_id": "test-doc-1", "value": i, "find": "test_col", "$db": "benchmark_db"}
        acc += len(d) + d["value"] % 7
        s = "%s.%s" % (d["$db"], d["find"])
        acc += len(s)
    return (time.perf_counter() - t0) * 1e6 / n


def main():
    pingpong(2000)  # warm-up
    batches = pingpong(ROUNDS)
    loop = min(lock_loop(20000) for _ in range(3))
    half = statistics.mean(batches)
    cv = statistics.pstdev(batches) / half if half > 0 else 0.0
    cold = sorted(cold_handoff())
    cold = cold[:len(cold) - len(cold) // 100]
    cold_mean = statistics.mean(cold)
    cold_cv = min(statistics.pstdev(cold) / cold_mean, 10.0)
    gil = getattr(sys, "_is_gil_enabled", lambda: True)()
    print("py_version", sys.version.split()[0])
    print("gil", 1 if gil else 0)
    print("switch_interval_us", "%.1f" % (sys.getswitchinterval() * 1e6))
    print("handoff_us", "%.3f" % max((half - loop) * 1e6, 0.0))
    print("handoff_cv", "%.3f" % cv)
    print("loop_us", "%.3f" % (loop * 1e6))
    print("handoff_cold_us", "%.3f" % (cold_mean * 1e6))
    sw, base = switch_cpu()
    print("pp_switch_cpu_us", "%.3f" % max(sw * 1e6, 0.0))
    csw, gap, cbase = contended()
    print("switch_cpu_us", "%.3f" % max(csw * 1e6, 0.0))
    print("handoff_contended_us", "%.3f" % (gap * 1e6))
    print("switch_base_us", "%.3f" % (cbase * 1e6))
    print("handoff_cold_cv", "%.3f" % cold_cv)
    st, st_lo, st_hi = switch_stretch()
    print("switch_stretch", "%.4f" % st)
    print("switch_stretch_min", "%.4f" % st_lo)
    print("switch_stretch_max", "%.4f" % st_hi)
    print("cpu_loop_us", "%.4f" % min(cpu_loop() for _ in range(5)))


if __name__ == "__main__":
    main()
