#!/usr/bin/python3
"""lock_contend.py -- the driver-lock facts of mtrace sim, measured in
CPython itself without pymongo (run by `mtrace calibrate`).

The convoy.  N threads each make CALLS calls shaped like pymongo 3.11's
find_one (docs/sim-model.md, "A call"): SECTIONS = 5 sections on one
shared threading.Lock, BEFORE = 4 of them before the send, each holding
HOLD_US of Python; PRE_US of Python, a sendall of 64 bytes to a TCP
loopback echo in another process (the server: it answers at once, or
DELAY ms after the read, as mtrace replay --delay-ms does), a blocking
recv, POST_US of Python, the last section.  The Python is dict building
and iteration (GIL held).  Every acquire is a try with the GIL held, then
the blocking acquire (what lock.acquire() does: Modules/_threadmodule.c
acquire_timed); a failed try is a block.  Each call creates a "session"
with uuid.uuid4() (os.urandom(16), the GIL released: client_session.py
834 ServerSession.__init__), in two arms that differ in nothing else:
  in   inside the first section, as pymongo 3.11 does under
       topology.py 477-500's `with self._lock` when its session pool is
       empty: the lock is held across a GIL release, a queue forms
  out  just before the first section
Per call (the first 5 of each thread left out), over the calling threads:
  cpu_us   time.thread_time() around the call
  vcsw     voluntary context switches (getrusage RUSAGE_THREAD)
  blocks   lock acquires that blocked
  mean_ms  perf_counter() around the call
  cycle_us wall time of the row / its calls (1 / throughput)
Rows: 1 thread (arm in); N = 10 and 20 threads x delays 0 and 1 ms x
both arms; REPS interleaved repetitions (default 5), the median of each
figure.

Prints "key value" lines:
  py_version             sys.version of this interpreter
  convoy_seq_cpu_us      CPU per call, 1 thread, delay 0
  convoy_switch_cpu_us   the convoy's CPU per voluntary switch, pooled over
                         the (N, delay) pairs whose arm "in" blocks at least
                         0.5 times per call (median; none: at least 0.2,
                         and convoy_weak 1): sum of (cpu_us(in) -
                         cpu_us(out)) / sum of (vcsw(in) - vcsw(out)), each
                         the mean over the repetitions; 0 with no pair
  convoy_block_cpu_us    the same pairs: extra CPU per lock block
  convoy_vcsw_per_block  the same pairs: extra voluntary switches per block
  convoy_pairs           pairs used
  convoy_<row>_<figure>  every row's medians (row: T1_d0, T20in_d1, ...)
  lock_pp_wake_us        2 threads in strict turns on a threading.Lock: the
                         waiter blocked ~200 us, the releaser blocks on a
                         second lock at once (the GIL is free): release() ->
                         the waiter running Python, mean less the top 1 %
                         (the semaphore's futex wake-up, the waiter's
                         switch-in and an uncontended take_gil), diagnostic
Usage: lock_contend.py [REPS, default 5]
"""
import heapq
import os
import resource
import select
import socket
import statistics
import sys
import threading
import time
import uuid

from gil_pingpong import trim_mean_cv  # beside this file

SECTIONS, BEFORE = 5, 4
PRE_US, POST_US, HOLD_US = 100.0, 50.0, 2.0
CALLS = 300
ROWS = [(1, "in", 0.0), (1, "in", 1.0)] + [
    (n, arm, d) for d in (0.0, 1.0) for n in (10, 20) for arm in ("in", "out")]


def unit():
    d = {'find': 'c', 'filter': {'_id': 'x'}, 'limit': 1, '$db': 'test',
         'lsid': None}
    s = 0
    for k, _ in d.items():
        s += len(k)
    return s


def py_work(n):
    for _ in range(n):
        unit()


def units_for(us):
    """How many unit() calls take about us microseconds."""
    n = 2000
    xs = []
    for _ in range(7):
        t0 = time.perf_counter()
        py_work(n)
        xs.append(time.perf_counter() - t0)
    return max(1, int(round(us / (statistics.median(xs) / n * 1e6))))


def echo(lsock, nconn, delay_s):
    """The server (a child process): accepts nconn connections and answers
    each message at read + delay_s; exits when a peer closes."""
    socks = [lsock.accept()[0] for _ in range(nconn)]
    for s in socks:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    pend = []
    while True:
        tmo = max(0.0, pend[0][0] - time.monotonic()) if pend else None
        r, _, _ = select.select(socks, [], [], tmo)
        for s in r:
            b = s.recv(4096)
            if not b:
                return
            if delay_s > 0:
                heapq.heappush(pend, (time.monotonic() + delay_s, s.fileno(), s, b))
            else:
                s.sendall(b)
        now = time.monotonic()
        while pend and pend[0][0] <= now:
            e = heapq.heappop(pend)
            e[2].sendall(e[3])


def row(nthreads, arm, delay_ms, k, calls):
    """One row: its per-call figures (see the module doc)."""
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(64)
    addr = ls.getsockname()
    pid = os.fork()
    if pid == 0:
        try:
            echo(ls, nthreads, delay_ms / 1000.0)
        finally:
            os._exit(0)
    ls.close()
    socks = []
    for _ in range(nthreads):
        s = socket.create_connection(addr)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        socks.append(s)
    lock = threading.Lock()
    inside = arm == "in"
    out = []
    go = threading.Barrier(nthreads + 1)
    msg = b'x' * 64
    kpre, kpost, khold = k

    def section(i, sess):
        blocked = 0
        if not lock.acquire(False):
            lock.acquire()
            blocked = 1
        if i == 0 and inside:
            sess = {"id": uuid.uuid4().bytes}
        py_work(khold)
        lock.release()
        return blocked, sess

    def worker(sk):
        go.wait()
        cpu = vcs = blk = 0.0
        lat = []
        for c in range(calls):
            r0 = resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw
            c0 = time.thread_time()
            t0 = time.perf_counter()
            nb, sess = 0, None
            if not inside:
                sess = {"id": uuid.uuid4().bytes}
            for i in range(BEFORE):
                b, sess = section(i, sess)
                nb += b
            py_work(kpre)
            sk.sendall(msg)
            sk.recv(4096)
            py_work(kpost)
            for i in range(BEFORE, SECTIONS):
                b, sess = section(i, sess)
                nb += b
            t1 = time.perf_counter()
            c1 = time.thread_time()
            r1 = resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw
            if c >= 5:
                cpu += c1 - c0
                vcs += r1 - r0
                blk += nb
                lat.append(t1 - t0)
        out.append((cpu, vcs, blk, lat))

    ths = [threading.Thread(target=worker, args=(s,)) for s in socks]
    for t in ths:
        t.start()
    go.wait()
    w0 = time.perf_counter()
    for t in ths:
        t.join()
    wall = time.perf_counter() - w0
    for s in socks:
        s.close()
    os.waitpid(pid, 0)
    lat = [x for o in out for x in o[3]]
    n = len(lat)
    return {"cpu_us": sum(o[0] for o in out) / n * 1e6,
            "vcsw": sum(o[1] for o in out) / n,
            "blocks": sum(o[2] for o in out) / n,
            "mean_ms": statistics.mean(lat) * 1e3,
            "cycle_us": wall / (nthreads * calls) * 1e6}


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


def row_name(r):
    n, arm, d = r
    return "T%d%s_d%g" % (n, "" if n == 1 else arm, d)


def main():
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    k = (units_for(PRE_US), units_for(POST_US), units_for(HOLD_US))
    print("py_version", sys.version.split()[0])
    res = {r: [] for r in ROWS}
    for rep in range(reps):  # interleaved, the order rotating
        for r in ROWS[rep % len(ROWS):] + ROWS[:rep % len(ROWS)]:
            res[r].append(row(r[0], r[1], r[2], k, 5 * CALLS if r[0] == 1 else CALLS))
    med = {r: {f: statistics.median(x[f] for x in res[r]) for f in res[r][0]}
           for r in ROWS}
    for r in ROWS:
        for f, v in med[r].items():
            print("convoy_%s_%s %.3f" % (row_name(r), f, v))
    print("convoy_seq_cpu_us %.3f" % med[ROWS[0]]["cpu_us"])
    weak = 0
    for lo in (0.5, 0.2):  # pairs by their medians; figures from the means
        pairs = []
        for n, arm, d in ROWS:
            if n > 1 and arm == "in":
                a, b = med[(n, "in", d)], med[(n, "out", d)]
                if a["blocks"] >= lo and a["vcsw"] > b["vcsw"]:
                    ra, rb = res[(n, "in", d)], res[(n, "out", d)]
                    pairs.append(tuple(statistics.mean(x[f] for x in ra) -
                                       statistics.mean(x[f] for x in rb)
                                       for f in ("cpu_us", "vcsw", "blocks")))
        if pairs:
            break
        weak = 1
    dc = sum(x[0] for x in pairs)
    dv = sum(x[1] for x in pairs)
    db = sum(x[2] for x in pairs)
    print("convoy_pairs %d" % len(pairs))
    print("convoy_weak %d" % weak)
    print("convoy_switch_cpu_us %.3f" % (dc / dv if pairs else 0.0))
    print("convoy_block_cpu_us %.3f" % (dc / db if pairs else 0.0))
    print("convoy_vcsw_per_block %.3f" % (dv / db if pairs else 0.0))
    print("lock_pp_wake_us %.3f" % (trim_mean_cv(pp_wake())[0] * 1e6))


if __name__ == "__main__":
    main()
