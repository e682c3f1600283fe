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
    print("cpu_loop_us", "%.4f" % min(cpu_loop() for _ in range(5)))


if __name__ == "__main__":
    main()
