#!/usr/bin/python3
"""attrib_blocks.py -- where pymongo threads block and wake (round 9).

Two sub-commands, used by sim/attrib_blocks.sh (which runs the client under
`perf record -a` with the scheduler and syscall tracepoints):

  client URI --threads N --calls K [--pmqos US] --out FILE
      validate_bench.py's method: one MongoClient, 200 sequential find_one
      calls (warm-up: pool, caches), then N threads x K calls; writes FILE
      (JSON): the threaded phase's CLOCK_MONOTONIC window, the threads'
      native ids, the calls, their latencies, and the address and size of
      _PyRuntime (where CPython 3.11 keeps the GIL: _PyRuntime.ceval.gil).

  analyse CLIENT_JSON PERF_SCRIPT_TXT
      reads `perf script` output (sched_switch, sched_waking,
      raw_syscalls:sys_enter/sys_exit) and prints, per call of the threaded
      phase: how often the client threads block (switch out asleep) and in
      which syscall -- futex on a word inside _PyRuntime (the GIL's
      cond/mutex/switch_cond/switch_mutex, listed by offset), futex on any
      other word (threading.Lock / Condition: pymongo's pool and topology
      locks), recvfrom, poll, ... -- the time blocked, the wake-up latency
      (sched_waking of the thread -> it runs) and who woke it; how often a
      GIL-cond wake was futile (the thread's next syscall is again a wait on
      the GIL cond); involuntary switches by syscall; and each CPU's idle
      share of the window.  A diagnostic: nothing here sets a parameter.
"""
import collections
import ctypes
import json
import os
import resource
import re
import statistics
import sys
import threading
import time

SYSCALLS = {0: "read", 1: "write", 7: "poll", 23: "select", 24: "sched_yield",
            44: "sendto", 45: "recvfrom", 46: "sendmsg", 47: "recvmsg",
            202: "futex", 230: "clock_nanosleep", 232: "epoll_wait", 270: "pselect6",
            271: "ppoll", 281: "epoll_pwait", 35: "nanosleep", 98: "getrusage"}


def client(argv):
    import argparse
    from pymongo import MongoClient
    ap = argparse.ArgumentParser()
    ap.add_argument("uri")
    ap.add_argument("--threads", type=int, default=10)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--out", required=True)
    ap.add_argument("--pmqos", type=int, help="hold /dev/cpu_dma_latency at this many us")
    ap.add_argument("--server-pid", type=int, help="also report this process's CPU per call")
    ap.add_argument("--prefill-sessions", type=int, default=0,
                    help="before the threaded phase, put this many server sessions in pymongo's pool "
                         "(round 16: a new session's uuid4() drops the GIL inside Topology._lock)")
    a = ap.parse_args(argv)
    if a.pmqos is not None:  # released when the process exits
        import struct
        pmfd = os.open("/dev/cpu_dma_latency", os.O_WRONLY)
        os.write(pmfd, struct.pack("i", a.pmqos))
    rt = ctypes.c_char.in_dll(ctypes.pythonapi, "_PyRuntime")
    cl = MongoClient(a.uri)
    col = cl["benchmark_db"]["test_col"]
    for _ in range(200):
        col.find_one({"_id": "test-doc-1"})
    if a.prefill_sessions:
        ss = [cl._topology.get_server_session() for _ in range(a.prefill_sessions)]
        for x in ss:
            cl._topology.return_server_session(x, True)
    lat = []
    tids = []
    thr_ru = []
    lock = threading.Lock()

    def worker():
        mine = []
        r0 = resource.getrusage(resource.RUSAGE_THREAD)
        for _ in range(a.calls):
            s = time.perf_counter()
            col.find_one({"_id": "test-doc-1"})
            mine.append((time.perf_counter() - s) * 1000)
        r1 = resource.getrusage(resource.RUSAGE_THREAD)
        with lock:
            lat.extend(mine)
            tids.append(threading.get_native_id())
            thr_ru.append((r1.ru_nvcsw - r0.ru_nvcsw, r1.ru_nivcsw - r0.ru_nivcsw))

    ths = [threading.Thread(target=worker) for _ in range(a.threads)]
    st0, ru0, sv0 = proc_stat(), resource.getrusage(resource.RUSAGE_SELF), pid_cpu(a.server_pid)
    t0 = time.clock_gettime(time.CLOCK_MONOTONIC)
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    t1 = time.clock_gettime(time.CLOCK_MONOTONIC)
    st1, ru1, sv1 = proc_stat(), resource.getrusage(resource.RUSAGE_SELF), pid_cpu(a.server_pid)
    cl.close()
    n = a.threads * a.calls
    locks = lock_words(cl, lock)
    hz = os.sysconf("SC_CLK_TCK")
    d = [y - x for x, y in zip(st0, st1)]
    cpu = {"client_us": 1e6 * (ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime) / n,
           "client_vcsw": (ru1.ru_nvcsw - ru0.ru_nvcsw) / n,
           "client_ivcsw": (ru1.ru_nivcsw - ru0.ru_nivcsw) / n,
           "server_us": 1e6 * (sv1 - sv0) / hz / n if a.server_pid else None,
           # /proc/stat cpu line: user nice system idle iowait irq softirq steal
           "busy_cores": (sum(d[:8]) - d[3] - d[4]) / max(1, sum(d[:8])) * os.cpu_count(),
           "steal_share": d[7] / max(1, sum(d[:8])),
           "window_us_per_call": 1e6 * (t1 - t0) / n,
           # the worker threads' own switches (RUSAGE_THREAD), without the main thread's
           "worker_vcsw": sum(v for v, _ in thr_ru) / n,
           "worker_ivcsw": sum(i for _, i in thr_ru) / n}
    json.dump({"t0": t0, "t1": t1, "tids": tids, "threads": a.threads, "calls": a.calls,
               "mean_ms": statistics.mean(lat), "stdev_pct": 100 * statistics.stdev(lat) /
               statistics.mean(lat) if len(lat) > 1 else 0.0, "pyruntime": ctypes.addressof(rt),
               "pyruntime_size": 0x28b20, "cpu": cpu, "locks": locks}, open(a.out, "w"))
    print(json.dumps({"mean_ms": statistics.mean(lat), "cpu": cpu}))


def sections(argv):
    """sections URI: one thread, the Python CPU of pymongo 3.11's Topology._lock users per call
    (round 16): select_server (held for nearly all of it), get_server_session +
    return_server_session, and a new session's uuid.uuid4() (os.urandom drops the GIL)."""
    import uuid
    from pymongo import MongoClient
    from pymongo.read_preferences import ReadPreference
    cl = MongoClient(argv[0])
    col = cl["benchmark_db"]["test_col"]
    for _ in range(200):
        col.find_one({"_id": "test-doc-1"})
    top = cl._topology
    sel = ReadPreference.PRIMARY
    out = {}

    def timeit(name, fn, n=3000):
        xs = []
        for _ in range(n):
            t = time.thread_time_ns()
            fn()
            xs.append((time.thread_time_ns() - t) / 1e3)
        xs.sort()
        out[name] = {"p50_us": xs[n // 2], "mean_us": statistics.mean(xs[:int(n * 0.95)])}

    def sess():
        x = top.get_server_session()
        top.return_server_session(x, True)
    timeit("select_server", lambda: top.select_server(sel))
    timeit("get+return_server_session", sess)
    timeit("uuid4", uuid.uuid4)
    timeit("find_one", lambda: col.find_one({"_id": "test-doc-1"}), 1000)
    print(json.dumps(out))


STAT = ["blocks", "preempted", "gil->mutex", "gil->cond", "cond __g_refs", "outside _PyRuntime",
        "EAGAIN", "recvfrom"]


def stat(argv):
    """stat OUTDIR: attrib_blocks.sh's ATTRIB_STAT counts per threaded call (round 16)."""
    def counts(run):
        v = [int(x.split(",")[0]) for x in open(os.path.join(argv[0], "stat-%s.txt" % run))
             if x.strip() and not x.startswith("#")]
        return dict(zip(STAT, v))
    b, t = counts("base"), counts("threaded")
    c = json.load(open(os.path.join(argv[0], "client-threaded.json")))
    n = c["threads"] * c["calls"]
    x = {k: (t[k] - b[k]) / n for k in STAT}
    waits = sum(x[k] for k in STAT[2:6]) - x["EAGAIN"]
    print("threads %d x %d: mean %.3f ms, client CPU %.0f us, worker vcsw %.2f ivcsw %.2f per call"
          % (c["threads"], c["calls"], c["mean_ms"], c["cpu"]["client_us"], c["cpu"]["worker_vcsw"],
             c["cpu"]["worker_ivcsw"]))
    print("per call (perf stat): " + ", ".join("%s %.2f" % (k, x[k]) for k in STAT)
          + "; blocks not in a futex wait (recv) %.2f" % (x["blocks"] - waits))


def lock_words(cl, mine):
    """{name: address of the futex word} of pymongo 3.11's threading.Locks (round 16).

    A 3.11 lock object (Modules/_threadmodule.c lockobject / rlockobject) holds
    PyThread_type_lock after PyObject_HEAD (offset 16): on Linux a malloc'd
    sem_t (Python/thread_pthread.h USE_SEMAPHORES), whose futex word is at its
    start (glibc new_sem.data, little-endian).  Condition waits allocate a
    fresh lock per wait: those stay "other"."""
    out = {}

    def add(name, lk):
        if lk is not None:
            out[name] = ctypes.c_void_p.from_address(id(lk) + 16).value

    top = cl._topology
    add("topology._lock", top._lock)
    add("client.__lock", getattr(cl, "_MongoClient__lock", None))
    add("client.__index_cache_lock", getattr(cl, "_MongoClient__index_cache_lock", None))
    ex = getattr(cl, "_kill_cursors_executor", None)
    add("kill_cursors_executor._lock", getattr(ex, "_lock", None))
    add("bench.lat_lock", mine)
    for i, srv in enumerate(top._servers.values()):
        pool = srv._pool
        add("pool%d.lock" % i, pool.lock)
        sem = getattr(pool, "_socket_semaphore", None)
        add("pool%d._socket_semaphore" % i, getattr(getattr(sem, "_cond", None), "_lock", None))
        mon = getattr(srv, "_monitor", None)
        add("monitor%d.executor._lock" % i, getattr(getattr(mon, "_executor", None), "_lock", None))
        rtt = getattr(mon, "_rtt_monitor", None)
        add("rtt%d._lock" % i, getattr(rtt, "_lock", None))
        add("rtt%d.executor._lock" % i, getattr(getattr(rtt, "_executor", None), "_lock", None))
        mp = getattr(mon, "_pool", None)
        if mp is not None and mp is not pool:
            add("monitor%d.pool.lock" % i, mp.lock)
    return out


def proc_stat():
    return [int(x) for x in open("/proc/stat").readline().split()[1:9]]


def pid_cpu(pid):
    """utime + stime of pid in clock ticks (0 without a pid)."""
    if not pid:
        return 0
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])


LINE = re.compile(r"^\s*(\S.*?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s*(.*)$")


def parse(path):
    """Yields (time_s, tid, cpu, event, text) from perf script's default output."""
    for line in open(path, errors="replace"):
        m = LINE.match(line)
        if m:
            yield (float(m.group(4)), int(m.group(2)), int(m.group(3)), m.group(5), m.group(6),
                   m.group(1).strip())


LOCKS = {}  # futex word -> name (client JSON "locks", round 16)


def classify(nr, args, rt, rsz):
    name = SYSCALLS.get(nr, "sys%d" % nr)
    if name != "futex":
        return name
    addr = args[0]
    op = args[1] & 0x7f  # FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME off
    if rt <= addr < rt + rsz:
        return "futex rt+0x%x op%d" % (addr - rt, op)
    if addr in LOCKS:
        return "lock %s op%d" % (LOCKS[addr], op)
    return "futex other op%d" % op


class Thread:
    def __init__(self):
        self.sys = None          # (nr, args, t) of the syscall in progress
        self.blocked = None      # (t, category) when switched out asleep
        self.woken = None        # (t, waker comm) of the last sched_waking
        self.last_gil_wake = None
        self.cur_cat = self.prev_sys = None
        self.ctx_wait = self.pending_ctx = None
        self.ctx_t = 0.0


def analyse(argv):
    cj, txt = argv
    c = json.load(open(cj))
    t0, t1, rt, rsz = c["t0"], c["t1"], c["pyruntime"], c["pyruntime_size"]
    tids = set(c["tids"])
    LOCKS.update({v: k for k, v in c.get("locks", {}).items() if v})
    ncalls = c["threads"] * c["calls"]
    th = collections.defaultdict(Thread)
    blocks = collections.Counter()
    blocked_us = collections.defaultdict(float)
    wake_lat = collections.defaultdict(list)
    wakers = collections.defaultdict(collections.Counter)
    invol = collections.Counter()
    futile = collections.Counter()
    other_addr = collections.Counter()
    idle_since = {}
    idle = collections.defaultdict(float)
    cpus = set()
    ctx = collections.Counter()  # (syscall before, blocked in, syscall after)
    for t, tid, cpu, ev, text, comm in parse(txt):
        if t < t0 or t > t1:
            continue
        cpus.add(cpu)
        if ev == "raw_syscalls:sys_enter" and tid in tids:
            m = re.match(r"NR (\d+) \(([^)]*)\)", text)
            if m:
                args = [int(x, 16) for x in m.group(2).split(",")]
                nr = int(m.group(1))
                st = th[tid]
                cat = classify(nr, args, rt, rsz)
                if st.pending_ctx is not None:
                    ctx[st.pending_ctx + (cat if t - st.ctx_t < 20e-6 else cat + " (>20us)",)] += 1
                    st.pending_ctx = None
                if st.last_gil_wake is not None:
                    cat = classify(nr, args, rt, rsz)
                    futile[(st.last_gil_wake, "futile" if cat == st.last_gil_wake else "took/other")] += 1
                    st.last_gil_wake = None
                st.prev_sys = st.cur_cat
                st.cur_cat = cat
                st.sys = (nr, args, t)
        elif ev == "raw_syscalls:sys_exit" and tid in tids:
            th[tid].sys = None
            if th[tid].ctx_wait is not None:
                th[tid].pending_ctx = th[tid].ctx_wait
                th[tid].ctx_t = t
                th[tid].ctx_wait = None
        elif ev == "sched:sched_waking":
            m = re.search(r"pid=(\d+)", text)
            if m and int(m.group(1)) in tids:
                th[int(m.group(1))].woken = (t, "client" if tid in tids else
                                             ("irq/idle" if tid == 0 else comm))
        elif ev == "sched:sched_switch":
            m = re.search(r"prev_pid=(\d+) .*prev_state=(\S+) ==> next_comm=.* next_pid=(\d+)", text)
            if not m:
                continue
            prev, state, nxt = int(m.group(1)), m.group(2), int(m.group(3))
            if prev == 0 and cpu in idle_since:
                idle[cpu] += t - idle_since.pop(cpu)
            if nxt == 0:
                idle_since[cpu] = t
            if prev in tids:
                st = th[prev]
                cat = classify(st.sys[0], st.sys[1], rt, rsz) if st.sys else "user"
                if state.startswith("R"):
                    invol[cat] += 1
                else:
                    blocks[cat] += 1
                    if cat.startswith("futex other") and st.sys:
                        other_addr[st.sys[1][0]] += 1
                    st.blocked = (t, cat)
                    st.woken = None
            if nxt in tids:
                st = th[nxt]
                if st.blocked:
                    bt, cat = st.blocked
                    blocked_us[cat] += (t - bt) * 1e6
                    if st.woken:
                        wake_lat[cat].append((t - st.woken[0]) * 1e6)
                        wakers[cat][st.woken[1]] += 1
                    if cat.startswith("futex rt"):
                        st.last_gil_wake = cat
                    st.ctx_wait = (st.prev_sys, cat)
                    st.blocked = None
    for cpu, s in idle_since.items():
        idle[cpu] += t1 - s
    win = t1 - t0
    print("threads %d x %d calls: mean %.3f ms stdev %.1f%%; window %.3f s; per call below"
          % (c["threads"], c["calls"], c["mean_ms"], c["stdev_pct"], win))
    print("CPU idle share of the window: " + ", ".join("cpu%d %.1f%%" % (k, 100 * idle[k] / win)
                                                     for k in sorted(cpus)))
    print("%-26s %8s %10s %9s %9s %9s  %s" % ("blocked in", "per call", "us/call", "wake p50",
                                             "wake mean", "wake p90", "woken by"))
    for cat, n in blocks.most_common():
        wl = sorted(wake_lat[cat])
        p = (lambda q: wl[min(len(wl) - 1, int(q * len(wl)))]) if wl else (lambda q: float("nan"))
        print("%-26s %8.2f %10.1f %9.1f %9.1f %9.1f  %s" % (
            cat, n / ncalls, blocked_us[cat] / ncalls, p(0.5),
            statistics.mean(wl) if wl else float("nan"), p(0.9),
            ", ".join("%s %d" % kv for kv in wakers[cat].most_common(3))))
    print("involuntary switches per call by syscall: " + ", ".join(
        "%s %.2f" % (k, v / ncalls) for k, v in invol.most_common()))
    print("blocks by (syscall before -> blocked in -> next syscall; '>20us': Python ran between), per call:")
    for k, v in ctx.most_common(25):
        if v / ncalls >= 0.02:
            print("  %-24s -> %-24s -> %-30s %.2f" % (k[0], k[1], k[2], v / ncalls))
    if other_addr:
        print("other futex words blocked on (address: per call): " + ", ".join(
            "0x%x: %.2f" % (k, v / ncalls) for k, v in other_addr.most_common(6)))
    print("client without tracing of the same run: worker vcsw %.2f ivcsw %.2f per call"
          % (c["cpu"].get("worker_vcsw", float("nan")), c["cpu"].get("worker_ivcsw", float("nan"))))
    print("after a wake from a GIL futex, the next syscall: " + ", ".join(
        "%s %s %.2f" % (k[0], k[1], v / ncalls) for k, v in sorted(futile.items())))


if __name__ == "__main__":
    {"client": client, "analyse": analyse, "sections": sections, "stat": stat}[sys.argv[1]](sys.argv[2:])
