#!/usr/bin/python3
"""validate_bench.py URI [--threads 2,4,10,20] [--calls 100] [--seq 1000]
[--seq-only] [--xcore] [--xcore-ab] [--xpair] [--dump FILE] [--label L]

Seed 000's benchmark method (2-benchmark.py): one MongoClient; find_one
{"_id": "test-doc-1"} timed with time.perf_counter(); sequential SEQ calls,
first excluded; then, on the same client, for each T of --threads, T
threads x CALLS calls started one after the other and joined (the pool keeps
the connections of the previous rows).  Prints one JSON line per row:
{"label", "mode", "threads", "n", "mean_ms", "stdev_pct", "cpu_us", "vcsw",
"ivcsw"}:
cpu_us is
the mean CPU time of the calling thread per call (time.thread_time() around
find_one: Python with the GIL held, the socket syscalls and the GIL
hand-over work), which calibrates the model's Python CPU from the
sequential row; vcsw is the calling thread's voluntary context switches per
call (getrusage(RUSAGE_THREAD) ru_nvcsw over the thread's calls: each time
it blocked, on the socket or on the GIL's condition variable), a diagnostic
only; ivcsw the involuntary ones (ru_nivcsw: each time it was switched
out while runnable, e.g. by the server its sendall woke), a diagnostic too.
The sequential row also has "cpu_cv": the coefficient of variation of the
thread CPU per call (first call excluded), which calibrates the model's
py_cv (time off the CPU, e.g. other processes' turns, is not in it).
--xcore adds to the sequential row "xcore_cpu_us": the same sequential
client (one thread, no contention), its thread CPU per call when each call
runs on the other core than the previous one (os.sched_setaffinity before
the call, outside the timed part) minus the same with every call on the
first core; 5 phase pairs of 200 calls, each phase's mean less its top 5 %,
the median difference ("xcore_fixed_us": the median one-core CPU).  The
working set of one call, moved between cores: what a GIL hand-over between
threads on different cores costs the new holder (mtrace sim's
gil_xcore_cpu_us).  Affinity is restored before the threaded rows.
--xcore-ab (round 12; implies --xcore) measures it a second time with a PM
QoS CPU wake-up latency request of 0 held on /dev/cpu_dma_latency (idle
vCPUs poll instead of halting; GLOBAL while held, ~1 s: run it under the
bench lock, as validate.sh is), right after the first, and adds
"xcore_poll_cpu_us" and "xcore_poll_fixed_us": on this VM a call that
blocks with its vCPU halted pays the halted vCPU's wake-up in its thread
CPU, in both phases but more often after a move (round 12: a median of
~21 us of ~80, 26 of 73 on the quiet machine; docs/sim-history.md);
validate_report.py uses the poll figure.  "pmqos_before_us" is the kernel's bound before the request
(0: someone else already held 0, the two figures are the same regime); no
poll figures when the device cannot be opened.
--xpair (round 15) measures the move between two threads instead of one
thread moving: two threads make the sequential calls in strict alternation
(one call in flight; each hands the next call to the other through a
threading.Lock), both pinned to the first core ("same") or each to its own
("cross"), against one thread on the first core ("one"); thread CPU per
call around find_one only (the hand-over itself is not in it), each phase's
mean less its top 5 %, 6 rounds of 200 calls per thread in rotating order.
Adds "xpair_cpu_us" (the median of cross minus same: what a call pays
because the previous call ran on the other core in another thread) and
"xpair_one_us" (cross minus one), and with a PM QoS request of 0 held
(as --xcore-ab) "xpair_poll_cpu_us" and "xpair_poll_one_us"; validate_report.py
uses xpair_poll_cpu_us for gil_xcore_cpu_us when present.
--dump appends
"LABEL-MODE LATENCY_MS" lines (for mtrace sim --plot --measured)."""
import argparse
import json
import os
import resource
import statistics
import struct
import sys
import threading
import time

from pymongo import MongoClient

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "calibrate"))
from gil_pingpong import pinned_cpu, tmean5, xcore_phases  # noqa: E402  (shared with mtrace calibrate)


CPU = threading.local()


def timings(col, n):
    out = []
    cpus = []
    r0 = resource.getrusage(resource.RUSAGE_THREAD)
    for _ in range(n):
        start = time.perf_counter()
        c0 = time.thread_time()
        col.find_one({"_id": "test-doc-1"})
        c1 = time.thread_time()
        out.append((time.perf_counter() - start) * 1000)
        cpus.append(c1 - c0)
    r1 = resource.getrusage(resource.RUSAGE_THREAD)
    CPU.us = sum(cpus) * 1e6 / n if n else 0.0
    # per-call CPU variation, first call excluded like the latencies
    CPU.cv = statistics.stdev(cpus[1:]) / statistics.mean(cpus[1:]) \
        if n > 2 and statistics.mean(cpus[1:]) > 0 else 0.0
    CPU.vcsw = (r1.ru_nvcsw - r0.ru_nvcsw) / n if n else 0.0
    CPU.ivcsw = (r1.ru_nivcsw - r0.ru_nivcsw) / n if n else 0.0
    return out


def xcore(col, n=200, phases=5):
    """See --xcore in the module doc: (xcore_cpu_us, xcore_fixed_us) or None."""
    r = xcore_phases(lambda: col.find_one({"_id": "test-doc-1"}), n, phases)
    if r is None:
        return None
    diff, fixed = r
    return statistics.median(diff) * 1e6, statistics.median(fixed) * 1e6


def pmqos_read():
    """The kernel's current CPU wake-up latency bound in us, or None."""
    try:
        with open("/dev/cpu_dma_latency", "rb") as f:
            return struct.unpack("i", f.read(4))[0]
    except OSError:
        return None


def with_pmqos0(fn, col, what):
    """fn(col) with a PM QoS request of 0 held (idle vCPUs poll), or None
    when /dev/cpu_dma_latency cannot be opened for writing."""
    try:
        fd = os.open("/dev/cpu_dma_latency", os.O_WRONLY)
    except OSError as e:
        print("validate_bench: %s: %s" % (what, e), file=sys.stderr)
        return None
    try:
        os.write(fd, struct.pack("i", 0))
        return fn(col)
    finally:
        os.close(fd)


def xcore_poll(col):
    """--xcore-ab: (xcore, fixed) with a PM QoS request of 0 held, or None."""
    return with_pmqos0(xcore, col, "--xcore-ab")


def _pair(col, n, cpus):
    """Two threads pinned to cpus[0] and cpus[1] make n calls each in strict
    alternation: thread CPU per call (s), the hand-over not included."""
    locks = [threading.Lock(), threading.Lock()]
    locks[1].acquire()
    xs = [[], []]

    def w(k):
        os.sched_setaffinity(0, {cpus[k]})
        for _ in range(n):
            locks[k].acquire()
            c0 = time.thread_time()
            col.find_one({"_id": "test-doc-1"})
            xs[k].append(time.thread_time() - c0)
            locks[1 - k].release()

    ths = [threading.Thread(target=w, args=(k,)) for k in (0, 1)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    return tmean5(xs[0] + xs[1])


def xpair(col, n=200, rounds=6):
    """See --xpair in the module doc: (cross - same, cross - one) in us, or
    None with one core; the caller's affinity is restored."""
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        return None
    ph = {"one": lambda: pinned_cpu(lambda: col.find_one({"_id": "test-doc-1"}), n, cores,
                                    False),
          "same": lambda: _pair(col, n, (cores[0], cores[0])),
          "cross": lambda: _pair(col, n, (cores[0], cores[1]))}
    order = ["one", "same", "cross"]
    got = {k: [] for k in ph}
    try:
        for i in range(rounds):
            for k in order[i % 3:] + order[:i % 3]:
                got[k].append(ph[k]())
    finally:
        os.sched_setaffinity(0, set(cores))
    cs = statistics.median(x - y for x, y in zip(got["cross"], got["same"]))
    co = statistics.median(x - y for x, y in zip(got["cross"], got["one"]))
    return cs * 1e6, co * 1e6


def xpair_poll(col):
    """--xpair with a PM QoS request of 0 held, or None."""
    return with_pmqos0(xpair, col, "--xpair")


def threaded(col, n_threads, calls):
    allt = []
    lock = threading.Lock()

    cpus = []
    vcsws = []
    ivcsws = []

    def worker():
        t = timings(col, calls)
        with lock:
            allt.extend(t)
            cpus.append(CPU.us)
            vcsws.append(CPU.vcsw)
            ivcsws.append(CPU.ivcsw)

    ths = [threading.Thread(target=worker) for _ in range(n_threads)]
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    CPU.us = statistics.mean(cpus)
    CPU.vcsw = statistics.mean(vcsws)
    CPU.ivcsw = statistics.mean(ivcsws)
    return allt


def row(label, mode, nthreads, t, dump, extra=None):
    mean = statistics.mean(t)
    r = {"label": label, "mode": mode, "threads": nthreads, "n": len(t),
         "mean_ms": round(mean, 5),
         "stdev_pct": round(100 * statistics.stdev(t) / mean, 3),
         "cpu_us": round(CPU.us, 3),
         "vcsw": round(CPU.vcsw, 3),
         "ivcsw": round(CPU.ivcsw, 3)}
    r.update(extra or {})
    print(json.dumps(r), flush=True)
    if dump:
        with open(dump, "a") as f:
            for x in t:
                f.write("%s-%s %.5f\n" % (label, mode, x))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("uri")
    ap.add_argument("--threads", default="2,4,10,20")
    ap.add_argument("--calls", type=int, default=100)
    ap.add_argument("--seq", type=int, default=1000)
    ap.add_argument("--seq-only", action="store_true")
    ap.add_argument("--xcore", action="store_true")
    ap.add_argument("--xcore-ab", action="store_true")
    ap.add_argument("--xpair", action="store_true")
    ap.add_argument("--dump")
    ap.add_argument("--label", default="run")
    a = ap.parse_args()
    client = MongoClient(a.uri)
    col = client["benchmark_db"]["test_col"]
    seq = timings(col, a.seq)[1:]
    cpu = (CPU.us, CPU.vcsw, CPU.ivcsw)
    cpu_cv = CPU.cv
    x = xcore(col) if a.xcore or a.xcore_ab else None
    before = pmqos_read() if a.xcore_ab and x else None
    xp = xcore_poll(col) if a.xcore_ab and x else None
    xq = xpair(col) if a.xpair else None
    if xq and before is None:
        before = pmqos_read()
    xqp = xpair_poll(col) if xq else None
    CPU.us, CPU.vcsw, CPU.ivcsw = cpu
    extra = {"cpu_cv": round(cpu_cv, 4)}
    if x:
        extra.update({"xcore_cpu_us": round(x[0], 3), "xcore_fixed_us": round(x[1], 3)})
    if xp:
        extra.update({"xcore_poll_cpu_us": round(xp[0], 3),
                      "xcore_poll_fixed_us": round(xp[1], 3), "pmqos_before_us": before})
    if xq:
        extra.update({"xpair_cpu_us": round(xq[0], 3), "xpair_one_us": round(xq[1], 3)})
    if xqp:
        extra.update({"xpair_poll_cpu_us": round(xqp[0], 3),
                      "xpair_poll_one_us": round(xqp[1], 3), "pmqos_before_us": before})
    row(a.label, "seq", 1, seq, a.dump, extra)
    if not a.seq_only:
        for n in [int(x) for x in a.threads.split(",") if x]:
            row(a.label, "t%d" % n, n, threaded(col, n, a.calls), a.dump)
    client.close()


if __name__ == "__main__":
    main()
