#!/usr/bin/python3
"""validate_handover.py THREADS[,THREADS...] [SECONDS] -- who takes the GIL
at each release of a pymongo-like loop (sim/validate.sh step 3c).

Each of N threads loops over: ~75 us of pure Python, sock.sendall(100 B),
~7.5 us, sock.recv(16), ~7.5 us, sock.recv(84), ~60 us (the shape of
pymongo 3.11's find_one: sendall, recv header, recv body, with the Python
split as the model's py_pre_frac 0.5 / py_post_frac 0.4), on its own
socketpair to an echo process forked for the run.  Every Python segment
appends (thread, segment) to one list (atomic under the GIL), so the order
in which threads held the GIL is known: for each release kind, the share of
releases after which another thread ran Python before this thread came
back ("hand-over").  Also per call: latency (perf_counter), voluntary and
involuntary context switches of the calling thread (RUSAGE_THREAD).
Prints one JSON object per thread count.  A diagnostic of the GIL model's
mechanism (mtrace sim predicts the same loop); never a calibration input.
"""
import json
import os
import resource
import select
import socket
import statistics
import sys
import threading
import time

SEG_US = 150.0  # Python per call


def echo(socks):
    ep = select.epoll()
    m = {s.fileno(): s for s in socks}
    for fd in m:
        ep.register(fd, select.EPOLLIN)
    while m:
        for fd, _ in ep.poll():
            d = m[fd].recv(4096)
            if not d:
                ep.unregister(fd)
                del m[fd]
                continue
            m[fd].sendall(d)
    os._exit(0)


def work(n):
    x = 0
    for i in range(n):
        x += i
    return x


def run(nthreads, seconds):
    pairs = [socket.socketpair() for _ in range(nthreads)]
    pid = os.fork()
    if pid == 0:
        for a, _ in pairs:
            a.close()
        echo([b for _, b in pairs])
    for _, b in pairs:
        b.close()
    t0 = time.perf_counter()
    work(200000)
    n_it = max(1, int(SEG_US * 1e-6 / ((time.perf_counter() - t0) / 200000)))
    seq, res, stop = [], {}, [False]
    msg = b"x" * 100

    def loop(tid):
        s, app, lat = pairs[tid][0], seq.append, []
        r0 = resource.getrusage(resource.RUSAGE_THREAD)
        while not stop[0]:
            t = time.perf_counter()
            app((tid, 0))
            work(n_it // 2)
            s.sendall(msg)
            app((tid, 1))
            work(n_it // 20)
            s.recv(16)
            app((tid, 2))
            work(n_it // 20)
            s.recv(84)
            app((tid, 3))
            work(n_it * 4 // 10)
            lat.append(time.perf_counter() - t)
        r1 = resource.getrusage(resource.RUSAGE_THREAD)
        res[tid] = (lat, r1.ru_nvcsw - r0.ru_nvcsw, r1.ru_nivcsw - r0.ru_nivcsw)

    ths = [threading.Thread(target=loop, args=(i,)) for i in range(nthreads)]
    for t in ths:
        t.start()
    time.sleep(seconds)
    stop[0] = True
    for t in ths:
        t.join()
    for a, _ in pairs:
        a.close()
    os.waitpid(pid, 0)
    s = seq[len(seq) // 10:]  # leave out the start
    after = {1: [0, 0], 2: [0, 0], 3: [0, 0]}
    last = {}
    for i, (tid, k) in enumerate(s):
        if k in after and tid in last:
            after[k][0] += 1
            after[k][1] += last[tid] != i - 1
        last[tid] = i
    lat = sorted(x * 1e3 for v in res.values() for x in v[0][5:])
    calls = sum(len(v[0]) for v in res.values())
    share = {k: (v[1] / v[0] if v[0] else 0.0) for k, v in after.items()}
    return {"mode": "t%d" % nthreads, "threads": nthreads, "n": len(lat),
            "mean_ms": round(statistics.mean(lat), 5),
            "stdev_pct": round(100 * statistics.stdev(lat) / statistics.mean(lat), 3),
            "p50_ms": round(lat[len(lat) // 2], 5),
            "p99_ms": round(lat[min(len(lat) - 1, int(0.99 * len(lat)))], 5),
            "handover_send": round(share[1], 4), "handover_recv_hdr": round(share[2], 4),
            "handover_recv_body": round(share[3], 4),
            "handovers_per_call": round(share[1] + share[2] + share[3], 4),
            "vcsw": round(sum(v[1] for v in res.values()) / calls, 3),
            "ivcsw": round(sum(v[2] for v in res.values()) / calls, 3)}


def main():
    threads = [int(x) for x in sys.argv[1].split(",")]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 1.5
    for n in threads:
        print(json.dumps(run(n, seconds)), flush=True)


if __name__ == "__main__":
    main()
