#!/usr/bin/python3
"""validate_spread.py [N] [REPS] -- the driver-free loop with pymongo's
structure, threads packed on one core vs spread over the cores (a diagnostic
of docs/sim-model.md's "working set's move between cores"; never a
calibration input).

Each thread loops: check a connection out of a LIFO deque under a
threading.Lock (pymongo's pool), Python (gil_pingpong.workload(N/2)),
sendall(100 B) + recv on loopback TCP (TCP_NODELAY) to a forked echo
process, Python (workload(N/2)), check in.  Rows: 1 thread on the first
core; 10 threads all on the first core ("packed"); 10 threads on core
i % ncores ("spread").  Per row: Python CPU and send+recv CPU per iteration
(time.thread_time), voluntary and involuntary context switches per
iteration (RUSAGE_THREAD).  One JSON object per row and repetition.
"""
import argparse
import collections
import json
import os
import resource
import selectors
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "calibrate"))
from gil_pingpong import _echo, workload  # noqa: E402


def echo(ls, n):
    _echo([ls.accept()[0] for _ in range(n)])


def run(nthreads, spread, n, iters):
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(nthreads)
    pid = os.fork()
    if pid == 0:
        try:
            echo(ls, nthreads)
        finally:
            os._exit(0)
    socks = []
    for _ in range(nthreads):
        s = socket.create_connection(ls.getsockname())
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        socks.append(s)
    ls.close()
    pool, plock = collections.deque(socks), threading.Lock()
    cores = sorted(os.sched_getaffinity(0))
    out, olock, bar = [], threading.Lock(), threading.Barrier(nthreads)
    msg = b"x" * 100

    def w(i):
        os.sched_setaffinity(0, {cores[i % len(cores)] if spread else cores[0]})
        py = io = 0.0
        bar.wait()
        r0 = resource.getrusage(resource.RUSAGE_THREAD)
        for _ in range(iters):
            c0 = time.thread_time()
            with plock:
                s = pool.popleft()
            workload(n // 2)
            c1 = time.thread_time()
            s.sendall(msg)
            s.recv(100)
            c2 = time.thread_time()
            workload(n // 2)
            with plock:
                pool.appendleft(s)
            c3 = time.thread_time()
            py += (c1 - c0) + (c3 - c2)
            io += c2 - c1
        r1 = resource.getrusage(resource.RUSAGE_THREAD)
        with olock:
            out.append((py, io, r1.ru_nvcsw - r0.ru_nvcsw, r1.ru_nivcsw - r0.ru_nivcsw))

    ths = [threading.Thread(target=w, args=(i,)) for i in range(nthreads)]
    for x in ths:
        x.start()
    for x in ths:
        x.join()
    for s in socks:
        s.close()
    os.waitpid(pid, 0)
    k = nthreads * iters
    return {"py_us": round(sum(o[0] for o in out) / k * 1e6, 2),
            "io_us": round(sum(o[1] for o in out) / k * 1e6, 2),
            "vcsw": round(sum(o[2] for o in out) / k, 3),
            "ivcsw": round(sum(o[3] for o in out) / k, 3)}


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n", 1)[1],
        usage="%(prog)s [N] [REPS]")
    ap.add_argument("n", nargs="?", type=int, default=200,
                    help="gil_pingpong.workload size per iteration, split in two halves (default 200)")
    ap.add_argument("reps", nargs="?", type=int, default=2,
                    help="repetitions of the three rows (default 2)")
    a = ap.parse_args()
    if a.n < 2 or a.reps < 1:
        ap.error("N must be >= 2 and REPS >= 1")
    n, reps = a.n, a.reps
    for rep in range(reps):
        for name, t, spread in (("1", 1, False), ("10-packed", 10, False), ("10-spread", 10, True)):
            r = run(t, spread, n, 2000 // t)
            r.update({"rep": rep, "row": name, "workload_n": n})
            print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
