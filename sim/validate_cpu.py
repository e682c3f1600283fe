#!/usr/bin/python3
"""validate_cpu.py URI THREADS[,THREADS...] [CALLS] [--pin one|spread|none]
-- where pymongo's thread CPU per find_one goes under GIL contention (a
diagnostic of docs/sim-model.md's "working set's move between cores"; never
a calibration input).

One MongoClient; for each thread count, T threads x CALLS calls of
find_one({"_id": "test-doc-1"}) (after a warm-up that opens T connections).
The pooled sockets are wrapped so that every sendall/recv_into is timed with
time.thread_time() and getrusage(RUSAGE_THREAD): a call's thread CPU is split
into Python segments (GIL held, between socket calls) and the socket calls
(GIL released, syscall, GIL taken back: the GIL waits are inside them), each
with its voluntary / involuntary context switches.  Python segments are
classified by the previous GIL holder: the same thread ("self"), another
thread on the same core ("same") or on the other core ("cross"); the core is
known because --pin one puts every thread on the first core and --pin spread
puts thread i on core i % ncores (--pin none leaves placement to the
scheduler: no classification).  Also GIL holder changes per call (a change
of the thread returning from a socket call) and migrations per call
(/proc/self/task/TID/sched se.nr_migrations).  The wrappers add a few
syscalls per socket call, with the GIL held.  One JSON object per row.
"""
import itertools
import json
import os
import resource
import statistics
import sys
import threading
import time

from pymongo import MongoClient

L = threading.local()
PREV = [(-1, -1)]  # (thread ident, core) of the last thread back from a socket call
SW = [0]
KINDS = ("py_self", "py_same", "py_cross", "py", "sendall", "recv_into")


def acc(kind, cpu, r0, r1):
    a = L.acc[kind]
    a[0] += cpu
    a[1] += r1.ru_nvcsw - r0.ru_nvcsw
    a[2] += r1.ru_nivcsw - r0.ru_nivcsw
    a[3] += 1


def acc_py(cpu, r1):
    pt, pc = L.prev
    me = threading.get_ident()
    if L.core >= 0:
        acc("py_self" if pt == me else "py_same" if pc == L.core else "py_cross", cpu, L.r, r1)
    acc("py", cpu, L.r, r1)


class Wrap:
    """A pooled socket whose sendall/recv_into are timed (module doc)."""

    def __init__(self, s):
        self._s = s

    def _io(self, f, *a):
        c0, r0 = time.thread_time(), resource.getrusage(resource.RUSAGE_THREAD)
        acc_py(c0 - L.c, r0)
        PREV[0] = (threading.get_ident(), L.core)
        x = f(*a)
        me = threading.get_ident()
        if PREV[0][0] != me:
            SW[0] += 1
        L.prev = PREV[0]
        PREV[0] = (me, L.core)
        L.c, L.r = time.thread_time(), resource.getrusage(resource.RUSAGE_THREAD)
        acc(f.__name__, L.c - c0, r0, L.r)
        return x

    def sendall(self, *a):
        return self._io(self._s.sendall, *a)

    def recv_into(self, *a):
        return self._io(self._s.recv_into, *a)

    def __getattr__(self, k):
        return getattr(self._s, k)


def migrations():
    with open("/proc/self/task/%d/sched" % threading.get_native_id()) as f:
        for line in f:
            if line.startswith("se.nr_migrations"):
                return int(line.split()[-1])
    return 0


def main():
    a = [x for x in sys.argv[1:] if not x.startswith("--")]
    pin = sys.argv[sys.argv.index("--pin") + 1] if "--pin" in sys.argv else "none"
    if "--pin" in sys.argv:
        a.remove(pin)
    uri, tl = a[0], [int(x) for x in a[1].split(",")]
    calls = int(a[2]) if len(a) > 2 else 200
    cores = sorted(os.sched_getaffinity(0))
    client = MongoClient(uri)
    col = client["benchmark_db"]["test_col"]
    out, lock, cnt = [], threading.Lock(), itertools.count()

    def worker(n, bar, measure):
        i = next(cnt)
        L.core = cores[0] if pin == "one" else cores[i % len(cores)] if pin == "spread" else -1
        os.sched_setaffinity(0, {L.core} if L.core >= 0 else set(cores))
        L.acc = {k: [0.0, 0, 0, 0] for k in KINDS}
        bar.wait()
        m0, lat = migrations(), []
        for _ in range(n):
            t0 = time.perf_counter()
            L.prev = PREV[0]
            L.c, L.r = time.thread_time(), resource.getrusage(resource.RUSAGE_THREAD)
            col.find_one({"_id": "test-doc-1"})
            c1, r1 = time.thread_time(), resource.getrusage(resource.RUSAGE_THREAD)
            acc_py(c1 - L.c, r1)
            PREV[0] = (threading.get_ident(), L.core)
            lat.append(time.perf_counter() - t0)
        if measure:
            with lock:
                out.append((L.acc, lat, migrations() - m0))

    def run(t, n, measure):
        bar = threading.Barrier(t)
        ths = [threading.Thread(target=worker, args=(n, bar, measure)) for _ in range(t)]
        for th in ths:
            th.start()
        for th in ths:
            th.join()

    for _ in range(200):
        col.find_one({"_id": "test-doc-1"})
    run(max(tl), 10, False)  # opens the connections
    port = int(uri.rstrip("/").rsplit(":", 1)[1])
    for si in list(client._topology.select_server_by_address(("127.0.0.1", port)).pool.sockets):
        si.sock = Wrap(si.sock)
    for t in tl:
        out.clear()
        SW[0] = 0
        run(t, calls, True)
        n = t * calls
        lat = [x for o in out for x in o[1]]
        row = {"pin": pin, "threads": t, "n": n, "mean_ms": round(statistics.mean(lat) * 1e3, 4),
               "gil_switches_per_call": round(SW[0] / n, 3),
               "migrations_per_call": round(sum(o[2] for o in out) / n, 3)}
        for k in KINDS:
            c = sum(o[0][k][3] for o in out)
            if not c:
                continue
            row[k] = {"per_call": round(c / n, 3),
                      "cpu_us_each": round(sum(o[0][k][0] for o in out) / c * 1e6, 2),
                      "cpu_us_per_call": round(sum(o[0][k][0] for o in out) / n * 1e6, 2),
                      "vcsw_per_call": round(sum(o[0][k][1] for o in out) / n, 3),
                      "ivcsw_per_call": round(sum(o[0][k][2] for o in out) / n, 3)}
        print(json.dumps(row), flush=True)
    os._exit(0)  # the wrapped sockets are left to the process's end


if __name__ == "__main__":
    main()
