#!/usr/bin/python3
"""validate_bench.py URI [--seq 1000] [--locks 300] [--rows 2,4,10,20]
[--calls 100] [--warm N] [--xcore N] [--seq-only] [--dump FILE] [--label L]

Seed 000's benchmark method (2-benchmark.py): one MongoClient; find_one
{"_id": "test-doc-1"} timed with time.perf_counter(); sequential SEQ calls,
first excluded; then, on the same client, one threaded row after the other:
T threads x CALLS calls, started together and joined (the pool keeps its
connections from row to row).  Prints one JSON line per row:

  label, mode ("seq", "tT", or "tTp" for a row with the session pool
  prefilled), threads, n, mean_ms, stdev_pct, p50_ms, p99_ms,
  cpu_us   mean thread CPU per call (time.thread_time() around find_one:
           Python with the GIL held, the socket syscalls, the block/wake
           cycles), over the calling threads
  vcsw, ivcsw  the calling threads' voluntary / involuntary context
           switches per call (getrusage RUSAGE_THREAD), diagnostics

The sequential row also has, from the sequential run alone:
  cpu_cv   the coefficient of variation of the thread CPU per call (first
           call excluded)
  lock_sections, lock_hold_us, lock_before, lock_hold_cv  (--locks N > 0):
           N more sequential calls with pymongo's Topology._lock
           (client._topology._lock) wrapped in a counting, timing lock
           that delegates to the real one: sections the calling thread
           holds per call; the mean time inside one (perf_counter from
           acquire's return to release's call, mean less the top 5 %, less
           the same for an empty section through the wrapper); how many
           per call start before the request is sent (SocketInfo.send_message
           wrapped the same way); their cv.  The lock's other users
           (the monitor thread) are not counted.  The wrapped calls are
           not in the latency or CPU figures.
  session_new_hold_us  (--locks) the first section's hold, measured the
           same way, over N/4 more calls each made with the server-session
           pool emptied first (pymongo then creates a session inside it:
           uuid.uuid4(), os.urandom); a diagnostic
  urandom_us  os.urandom(16) wall time (the GIL-released part of it)
  xcore_cpu_us, xcore_pin_cpu_us  (--xcore N > 0, two CPUs or more) N
           more sequential calls in interleaved blocks of 10: in one kind
           of block the thread's affinity moves to the other of two CPUs
           before each call (outside the timed part) and before each of
           the call's receives (recv_into, the header and the body), so
           every Python segment runs on a core other than the previous
           segment's and the previous call's same segment; in the other
           the affinity is set at the same points to the CPU it is on.
           The thread CPU per call of each kind, each block's first call
           left out (mtrace sim --seq-xcore-cpu-us A --seq-pinned-cpu-us P)

Each threaded row starts from a stated session pool (pymongo 3.11
client_session._ServerSessionPool, topology._session_pool, used under
topology._lock): "tT" rows with the pool trimmed to the one session the
sequential run left (what a client that ran sequentially has; a call finding
it empty creates a session inside the lock), "tTp" rows with it prefilled to
T sessions first (_ServerSession(pool.generation) objects appended as
return_server_session_no_lock does).  The row records "sessions" (in the
pool at its start), "sessions_after" and "conns" (the server's connection
pool, idle + in use, at its start).  --warm N first checks N connections
out of the pool at once and returns them, so every row starts with at least
N (no row pays for opening them); without it the pool grows as seed 000's
did.

--dump appends "LABEL-MODE LATENCY_MS" lines (mtrace sim --plot --measured,
tools/whatif.py).
"""
import argparse
import contextlib
import json
import os
import resource
import statistics
import threading
import time

from pymongo import MongoClient
from pymongo import pool as pm_pool
from pymongo.client_session import _ServerSession

CPU = threading.local()
DOC = {"_id": "test-doc-1"}
XCORE_BLOCK = 10


def timings(col, n):
    out = []
    cpus = []
    r0 = resource.getrusage(resource.RUSAGE_THREAD)
    for _ in range(n):
        start = time.perf_counter()
        c0 = time.thread_time()
        col.find_one(DOC)
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


class HopSocket:
    """A connection's socket that, before each recv_into (pymongo 3.11
    network.py 287: the reply's header, then its body), sets the calling
    thread's affinity to where["cpu"] after where["step"](): the Python
    that follows a receive runs where the benchmark says."""

    def __init__(self, real, where):
        self._real = real
        self._where = where

    def __getattr__(self, name):
        return getattr(self._real, name)

    def recv_into(self, *args):
        self._where["step"]()
        return self._real.recv_into(*args)


def xcore(client, col, n):
    """(moved, kept): CPU per call (time.thread_time() around find_one) in
    n more sequential calls, in interleaved blocks of XCORE_BLOCK.  In a
    moved block the thread's affinity goes to the other of two CPUs before
    each call (outside the timed part) and before each of the call's
    receives, so every Python segment of every call runs on a core other
    than the previous segment's (the call's own objects moved) and other
    than the same segment's in the previous call (three moves a call: the
    code and the driver's objects moved); in a kept block the affinity is
    set to the CPU it already is on at the same points (the same
    syscalls, no move).  Each block's first call is left out.  None with
    fewer than two CPUs."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return None
    pair = cpus[:2]
    where = {"cur": 0, "moving": False}

    def step():
        if where["moving"]:
            where["cur"] ^= 1
        os.sched_setaffinity(0, {pair[where["cur"]]})

    where["step"] = step
    srv = client._topology.select_server_by_address(client.address)
    socks = list(srv.pool.sockets)
    real = [si.sock for si in socks]
    got = {True: [], False: []}
    try:
        for si in socks:
            si.sock = HopSocket(si.sock, where)
        for b in range(max(2, n // XCORE_BLOCK)):
            where["moving"] = b % 2 == 0
            for i in range(XCORE_BLOCK):
                step()
                c0 = time.thread_time()
                col.find_one(DOC)
                c1 = time.thread_time()
                if i > 0:
                    got[where["moving"]].append(c1 - c0)
    finally:
        for si, r in zip(socks, real):
            si.sock = r
        os.sched_setaffinity(0, set(cpus))
    return statistics.mean(got[True]) * 1e6, statistics.mean(got[False]) * 1e6


def tmean5(xs):
    """Mean less the top 5 % (a section preempted by another process is not
    the section's own time)."""
    xs = sorted(xs)
    return statistics.mean(xs[:len(xs) - len(xs) // 20])


class TimedLock:
    """Delegates to a threading.Lock; records, for the thread `owner` only,
    each section's (start, hold) in seconds into self.log."""

    def __init__(self, lock, owner):
        self._lock = lock
        self._owner = owner
        self._t = 0.0
        self.log = []

    def acquire(self, blocking=True, timeout=-1):
        ok = self._lock.acquire(blocking, timeout)
        if ok and threading.get_ident() == self._owner:
            self._t = time.perf_counter()
        return ok

    def release(self):
        if threading.get_ident() == self._owner:
            t = time.perf_counter()
            self.log.append((self._t, t - self._t))
        self._lock.release()

    def locked(self):
        return self._lock.locked()

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()


def session_pool(client):
    return client._topology._session_pool


def set_sessions(client, n):
    """The server-session pool holds exactly n sessions (under the lock)."""
    top = client._topology
    with top._lock:
        p = top._session_pool
        while len(p) > n:
            p.pop()  # the least recently used are on the right
        while len(p) < n:
            p.appendleft(_ServerSession(p.generation))


def conns(client):
    """Connections of the one server's pool, idle + in use."""
    try:
        srv = client._topology.select_server_by_address(client.address)
        return len(srv.pool.sockets) + srv.pool.active_sockets
    except Exception:  # not a fact the row needs; never fail on it
        return -1


def lock_sections(client, col, n):
    """See lock_* in the module doc: dict of the figures."""
    top = client._topology
    real = top._lock
    w = TimedLock(real, threading.get_ident())
    sends = []
    orig_send = pm_pool.SocketInfo.send_message

    def send(self, message, max_doc_size):
        if threading.get_ident() == w._owner:
            sends.append(time.perf_counter())
        return orig_send(self, message, max_doc_size)

    empty = []
    for _ in range(2000):
        with w:
            pass
    empty = [h for _, h in w.log]
    w.log.clear()
    calls = []
    new_hold = []
    top._lock = w
    pm_pool.SocketInfo.send_message = send
    try:
        for _ in range(n):
            w.log.clear()
            del sends[:]
            col.find_one(DOC)
            calls.append((list(w.log), list(sends)))
        for _ in range(max(1, n // 4)):
            with real:
                top._session_pool.clear()
            w.log.clear()
            col.find_one(DOC)
            if w.log:
                new_hold.append(w.log[0][1])
    finally:
        top._lock = real
        pm_pool.SocketInfo.send_message = orig_send
    set_sessions(client, 1)
    e = tmean5(empty)
    holds = [h for secs, _ in calls for _, h in secs]
    before = [sum(1 for s, _ in secs if snd and s < snd[0]) for secs, snd in calls]
    hold = max(0.0, tmean5(holds) - e) if holds else 0.0
    sd = statistics.pstdev(holds) if len(holds) > 1 else 0.0
    t0 = time.perf_counter()
    for _ in range(1000):
        os.urandom(16)
    ur = (time.perf_counter() - t0) / 1000
    return {"lock_sections": round(statistics.mean(len(s) for s, _ in calls), 3),
            "lock_hold_us": round(hold * 1e6, 3),
            "lock_hold_cv": round(sd / hold, 3) if hold > 0 else 0.0,
            "lock_before": round(statistics.mean(before), 3),
            "lock_empty_us": round(e * 1e6, 3),
            "session_new_hold_us": round(max(0.0, tmean5(new_hold) - e) * 1e6, 3)
            if new_hold else None,
            "urandom_us": round(ur * 1e6, 3)}


def warm(client, n):
    """The server's connection pool holds at least n connections: n are
    checked out at once (pool.get_socket, as a command does) and returned."""
    srv = client._topology.select_server_by_address(client.address)
    with contextlib.ExitStack() as stack:
        for _ in range(n):
            stack.enter_context(srv.pool.get_socket({}))


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


def pct(sorted_t, q):
    """The q-quantile (0..1) of sorted_t, nearest rank."""
    k = min(len(sorted_t) - 1, max(0, int(round(q * len(sorted_t) + 0.5)) - 1))
    return sorted_t[k]


def row(label, mode, nthreads, t, dump, extra=None):
    mean = statistics.mean(t)
    s = sorted(t)
    r = {"label": label, "mode": mode, "threads": nthreads, "n": len(t),
         "mean_ms": round(mean, 5),
         "stdev_pct": round(100 * statistics.stdev(t) / mean, 3),
         "p50_ms": round(pct(s, 0.50), 5), "p99_ms": round(pct(s, 0.99), 5),
         "cpu_us": round(CPU.us, 3),
         "vcsw": round(CPU.vcsw, 3),
         "ivcsw": round(CPU.ivcsw, 3)}
    r.update(extra or {})
    print(json.dumps(r), flush=True)
    if dump:
        with open(dump, "a") as f:
            for x in t:
                f.write("%s-%s %.5f\n" % (label, mode, x))


def parse_rows(spec, ap):
    rows = []
    for x in spec.split(","):
        x = x.strip()
        if not x:
            continue
        pre = x.endswith("p")
        try:
            n = int(x[:-1] if pre else x)
        except ValueError:
            ap.error("--rows: %r is not a thread count (N or Np)" % x)
        if n < 1 or n > 1000:
            ap.error("--rows: thread counts must be 1..1000, got %d" % n)
        rows.append((n, pre))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("uri")
    ap.add_argument("--rows", "--threads", dest="rows", default="2,4,10,20")
    ap.add_argument("--calls", type=int, default=100)
    ap.add_argument("--seq", type=int, default=1000)
    ap.add_argument("--locks", type=int, default=300)
    ap.add_argument("--warm", type=int, default=0)
    ap.add_argument("--xcore", type=int, default=0)
    ap.add_argument("--seq-only", action="store_true")
    ap.add_argument("--dump")
    ap.add_argument("--label", default="run")
    a = ap.parse_args()
    rows = parse_rows(a.rows, ap)
    client = MongoClient(a.uri)
    col = client["benchmark_db"]["test_col"]
    seq = timings(col, a.seq)[1:]
    cpu = (CPU.us, CPU.vcsw, CPU.ivcsw)
    extra = {"cpu_cv": round(CPU.cv, 4)}
    if a.locks > 0:
        extra.update(lock_sections(client, col, a.locks))
    if a.xcore > 0:
        x = xcore(client, col, a.xcore)
        if x is not None:
            extra["xcore_cpu_us"] = round(x[0], 3)
            extra["xcore_pin_cpu_us"] = round(x[1], 3)
    CPU.us, CPU.vcsw, CPU.ivcsw = cpu
    row(a.label, "seq", 1, seq, a.dump, extra)
    if not a.seq_only:
        if a.warm > 0:
            warm(client, a.warm)
        for n, pre in rows:
            set_sessions(client, n if pre else 1)
            info = {"sessions": len(session_pool(client)), "conns": conns(client)}
            t = threaded(col, n, a.calls)
            info["sessions_after"] = len(session_pool(client))
            row(a.label, "t%d%s" % (n, "p" if pre else ""), n, t, a.dump, info)
    client.close()


if __name__ == "__main__":
    main()
