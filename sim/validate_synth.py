#!/usr/bin/python3
"""validate_synth.py -- a synthetic GIL workload for sim/validate.sh: T
threads each run K iterations of (a fixed pure-Python workload of ~150-250 us,
then time.sleep(0.0002), which releases the GIL), timed like seed 000's
benchmark (perf_counter around one iteration, the first excluded).  No
driver, no server: only the interpreter, the GIL and the OS.  Prints JSON
lines {"mode": "sleep"|"tN", "threads", "n", "mean_ms", "stdev_pct",
"cpu_us"}; the "sleep" row is time.sleep(0.0002) alone (the model's off-CPU
wait).  cpu_us (round 15) is the mean thread CPU per iteration
(time.thread_time() around it, first excluded), which calibrates the
model's Python CPU from the 1-thread row instead of the mean less the
sleep."""
import json
import statistics
import sys
import threading
import time


def workload(n=300):
    acc = 0
    for i in range(n):
        d = {"_id": "x", "value": i, "find": "c", "$db": "db", "filter": {"_id": "x"}}
        acc += len(d) + len("%s.%s" % (d["$db"], d["find"])) + len(repr(d["filter"]))
    return acc


def row(mode, threads, t, cpu):
    m = statistics.mean(t)
    print(json.dumps({"mode": mode, "threads": threads, "n": len(t), "mean_ms": round(m, 5),
                      "stdev_pct": round(100 * statistics.stdev(t) / m, 3),
                      "cpu_us": round(statistics.mean(cpu) * 1e6, 3)}), flush=True)


def run(T, K):
    out = []
    cpu = []
    lock = threading.Lock()

    def w():
        t = []
        c = []
        for _ in range(K):
            s = time.perf_counter()
            c0 = time.thread_time()
            workload()
            time.sleep(0.0002)
            c.append(time.thread_time() - c0)
            t.append((time.perf_counter() - s) * 1000)
        with lock:
            out.extend(t[1:])
            cpu.extend(c[1:])

    ths = [threading.Thread(target=w) for _ in range(T)]
    for x in ths:
        x.start()
    for x in ths:
        x.join()
    return out, cpu


def main():
    threads = [int(x) for x in (sys.argv[1] if len(sys.argv) > 1 else "1,2,4,10").split(",")]
    s = []
    c = []
    for _ in range(2000):
        t0 = time.perf_counter()
        c0 = time.thread_time()
        time.sleep(0.0002)
        c.append(time.thread_time() - c0)
        s.append((time.perf_counter() - t0) * 1000)
    row("sleep", 1, s, c)
    for T in threads:
        row("t%d" % T, T, *run(T, 200))


if __name__ == "__main__":
    main()
