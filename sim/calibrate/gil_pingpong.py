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
  wake_cpu_us      CPU of one block/wake cycle of a GIL waiter under
                   contention (pthread_cond_timedwait on gil->cond, the
                   futex wake from drop_gil, re-locking gil->mutex:
                   Python/ceval_gil.c take_gil/drop_gil).  T threads each
                   loop: a fixed ~30 us Python segment, then
                   sock.sendall(100 bytes) and sock.recv(100) on a
                   socketpair to a forked echo process (each call drops and
                   retakes the GIL).  Per iteration: the threads' CPU
                   (time.thread_time) of the send+recv part and their
                   voluntary context switches (getrusage RUSAGE_THREAD
                   ru_nvcsw: each time a thread blocked, on the GIL or the
                   socket); (CPU with T threads - CPU with 1) / (switches
                   with T - switches with 1).  The threads are pinned
                   alternately to the cores (os.sched_setaffinity), the
                   placement Linux's load balancer gives runnable threads
                   when a core is idle; T = 4 and 10; 5 alternating phases
                   (1, 4, 10 threads); the median of the 10 figures
  wake_cpu_min / _max  their smallest and largest
  take_cpu_us      the same CPU difference per GIL take (2 per iteration),
                   median (diagnostic)
  wake_vcsw        extra voluntary switches per take, median (diagnostic)
  take_cpu_unpinned_us  per-take CPU difference with 10 threads left where
                   the scheduler puts them (it may keep them on one core,
                   where a wake-up costs ~1 us), median (diagnostic)
  xcore_cpu_us     extra thread CPU of an iteration whose working set was
                   last used on another core: one thread loops (workload(100);
                   sendall(100 B) + recv on TCP loopback to a forked echo
                   process; workload(100)), either pinned to the first core
                   ("fixed") or moved to the next core before each iteration
                   (os.sched_setaffinity, outside the timed part:
                   "alternating"); thread CPU (time.thread_time) per
                   iteration, mean less the top 5 %; 5 phase pairs, the
                   median of (alternating - fixed).  What a GIL hand-over
                   to a thread on another core costs the new holder: the
                   interpreter's and the program's shared objects (refcounts
                   written by every use), the allocator's pools and the
                   socket's kernel state come from the other core's cache
  xcore_min / _max the smallest and largest of the 5 differences
  xcore_fixed_us   CPU per fixed iteration, median (diagnostic)
  cpu_loop_us      a fixed pure-Python workload (dict building and attribute
                   access, similar in kind to BSON encode/decode) in microseconds;
                   the ratio between two interpreters is a free-threaded slowdown
Usage: gil_pingpong.py [ROUNDS]
       gil_pingpong.py --idle-loop   (round 11; mtrace calibrate runs it
                   with and without a PM QoS request held, sim/calibrate_idle.c)
  idle_loop_cpu_us one thread pinned to the first CPU loops: workload(50),
                   sendall of 100 bytes on a socketpair to a forked echo
                   process pinned to the second CPU, which spins 50 us and
                   replies, recv (the thread blocks; its CPU is idle
                   meanwhile), workload(50); thread CPU (time.thread_time)
                   per iteration, 400 after 50 of warm-up, mean less the
                   top 5 %
  idle_loop_vcsw   voluntary context switches per iteration (RUSAGE_THREAD)
"""
import os
import resource
import selectors
import socket
import statistics
import sys
import threading
import time

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


def _echo(socks):
    """Echo server of contended_cpu(): runs in a forked child, one thread,
    until every peer has closed."""
    sel = selectors.DefaultSelector()
    for s in socks:
        sel.register(s, selectors.EVENT_READ)
    left = len(socks)
    while left:
        for key, _ in sel.select():
            b = key.fileobj.recv(4096)
            if not b:
                sel.unregister(key.fileobj)
                left -= 1
            else:
                key.fileobj.sendall(b)


def _takes(T, K, pin):
    """T threads x K iterations of (workload(150), sendall, recv) against a
    forked echo process.  Returns (send+recv thread CPU per iteration,
    voluntary context switches per iteration), all threads pooled."""
    pairs = [socket.socketpair() for _ in range(T)]
    pid = os.fork()
    if pid == 0:
        try:
            for a, _ in pairs:
                a.close()
            _echo([b for _, b in pairs])
        finally:
            os._exit(0)
    for _, b in pairs:
        b.close()
    out = []
    lock = threading.Lock()
    cores = sorted(os.sched_getaffinity(0))
    msg = b"x" * 100

    def w(i, s):
        if pin:
            os.sched_setaffinity(0, {cores[i % len(cores)]})
        io = 0.0
        r0 = resource.getrusage(resource.RUSAGE_THREAD)
        for _ in range(K):
            workload(150)
            c0 = time.thread_time()
            s.sendall(msg)
            s.recv(100)
            io += time.thread_time() - c0
        r1 = resource.getrusage(resource.RUSAGE_THREAD)
        with lock:
            out.append((io, r1.ru_nvcsw - r0.ru_nvcsw))

    ths = [threading.Thread(target=w, args=(i, a)) for i, (a, _) in enumerate(pairs)]
    for x in ths:
        x.start()
    for x in ths:
        x.join()
    for a, _ in pairs:
        a.close()
    os.waitpid(pid, 0)
    n = T * K
    return sum(o[0] for o in out) / n, sum(o[1] for o in out) / n


def contended_cpu(phases=5):
    """See wake_cpu_us in the module doc.  Returns a dict of figures in
    microseconds (wake_vcsw: a count)."""
    wake, take, vcs, unp = [], [], [], []
    for _ in range(phases):
        io1, v1 = _takes(1, 600, True)
        for T, K in ((4, 300), (10, 150)):
            io, v = _takes(T, K, True)
            take.append((io - io1) / 2)
            vcs.append((v - v1) / 2)
            if v - v1 > 0.05:
                wake.append((io - io1) / (v - v1))
        io, v = _takes(10, 150, False)
        unp.append((io - io1) / 2)
    if not wake:
        wake = [0.0]
    return {"wake_cpu_us": statistics.median(wake) * 1e6,
            "wake_cpu_min": min(wake) * 1e6, "wake_cpu_max": max(wake) * 1e6,
            "take_cpu_us": statistics.median(take) * 1e6,
            "wake_vcsw": statistics.median(vcs),
            "take_cpu_unpinned_us": statistics.median(unp) * 1e6}


def tmean5(xs):
    """Mean less the top 5 % (a preempted call's CPU is not the call's)."""
    xs = sorted(xs)
    return statistics.mean(xs[:len(xs) - len(xs) // 20])


def pinned_cpu(call, n, cores, alternate):
    """n calls of call(), each pinned to cores[0] or to the cores in turn:
    thread CPU per call, mean less the top 5 % (also sim/validate_bench.py
    --xpair's one-thread phase)."""
    xs = []
    for i in range(n):
        os.sched_setaffinity(0, {cores[i % len(cores)] if alternate else cores[0]})
        c0 = time.thread_time()
        call()
        xs.append(time.thread_time() - c0)
    return tmean5(xs)


def xcore_phases(call, n, phases, warmup=0):
    """The cross-core measurement, here (xcore_cpu_us) and in
    sim/validate_bench.py --xcore: `phases` pairs of n calls of call() on
    one core, then on alternating cores.  Returns the lists (alternating
    minus one-core CPU per call, one-core CPU per call), in seconds, or None
    with one core; the caller's affinity is restored."""
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        return None
    diff, fixed = [], []
    try:
        if warmup:
            pinned_cpu(call, warmup, cores, False)
        for _ in range(phases):
            f = pinned_cpu(call, n, cores, False)
            diff.append(pinned_cpu(call, n, cores, True) - f)
            fixed.append(f)
    finally:
        os.sched_setaffinity(0, set(cores))
    return diff, fixed


def xcore_cpu(K=400, phases=5):
    """See xcore_cpu_us in the module doc.  None with one core."""
    if len(os.sched_getaffinity(0)) < 2:
        return None
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(1)
    pid = os.fork()
    if pid == 0:
        try:
            _echo([ls.accept()[0]])
        finally:
            os._exit(0)
    s = socket.create_connection(ls.getsockname())
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    ls.close()
    msg = b"x" * 100

    def one():
        workload(100)
        s.sendall(msg)
        s.recv(100)
        workload(100)

    try:
        diff, fixed = xcore_phases(one, K, phases, warmup=50)
    finally:
        s.close()
        os.waitpid(pid, 0)
    return {"xcore_cpu_us": statistics.median(diff) * 1e6,
            "xcore_min": min(diff) * 1e6, "xcore_max": max(diff) * 1e6,
            "xcore_fixed_us": statistics.median(fixed) * 1e6}


def _spin_echo(s, cpu):
    """Child of idle_loop(): pinned to cpu; for each 100-byte request
    spins request[0] x 10 us (perf_counter), then echoes it."""
    os.sched_setaffinity(0, {cpu})
    while True:
        m = s.recv(100)
        if not m:
            return
        t = time.perf_counter() + m[0] * 1e-5
        while time.perf_counter() < t:
            pass
        s.sendall(m)


def idle_loop(K=400, spin_10us=5):
    """See --idle-loop in the module doc: (thread CPU per iteration in
    seconds, mean less the top 5 %; voluntary switches per iteration), or
    None with one core."""
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        return None
    a, b = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        try:
            a.close()
            _spin_echo(b, cores[1])
        finally:
            os._exit(0)
    b.close()
    msg = bytes([spin_10us]) + b"x" * 99
    xs = []
    try:
        os.sched_setaffinity(0, {cores[0]})
        for i in range(K + 50):
            if i == 50:
                r0 = resource.getrusage(resource.RUSAGE_THREAD)
            c0 = time.thread_time()
            workload(50)
            a.sendall(msg)
            a.recv(100)
            workload(50)
            if i >= 50:
                xs.append(time.thread_time() - c0)
        r1 = resource.getrusage(resource.RUSAGE_THREAD)
    finally:
        os.sched_setaffinity(0, set(cores))
        a.close()
        os.waitpid(pid, 0)
    return tmean5(xs), (r1.ru_nvcsw - r0.ru_nvcsw) / K


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
    if len(sys.argv) > 1 and sys.argv[1] == "--idle-loop":
        r = idle_loop()
        if r is None:
            sys.exit(1)
        print("idle_loop_cpu_us", "%.3f" % (r[0] * 1e6))
        print("idle_loop_vcsw", "%.3f" % r[1])
        return
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    pingpong(2000)  # warm-up
    batches = pingpong(rounds)
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
    try:
        for k, v in contended_cpu().items():
            print(k, "%.3f" % v)
    except OSError as e:  # no fork, no socketpair, no affinity: leave it out
        print("# contended_cpu failed: %s" % e, file=sys.stderr)
    try:
        for k, v in (xcore_cpu() or {}).items():
            print(k, "%.4f" % v)
    except OSError as e:  # no fork, no loopback TCP, no affinity
        print("# xcore_cpu failed: %s" % e, file=sys.stderr)
    print("cpu_loop_us", "%.4f" % min(cpu_loop() for _ in range(5)))


if __name__ == "__main__":
    main()
