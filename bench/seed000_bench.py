#!/usr/bin/python3
"""seed000_bench.py URI LABEL -- seed 000's benchmark (2-benchmark.py): a
warm-up upsert, then find_one sequentially (1000 calls, first excluded) and
from 10 threads x 100 calls.  Prints the two rows of seed 000's table as
JSON lines: {"label", "mode", "n", "mean_ms", "stdev_pct"}.
--no-upsert skips the replace_one (a replay trace may not hold it)."""
import json
import statistics
import sys
import threading
import time

from pymongo import MongoClient


def find_one_timings(col, doc_id, n):
    timings = []
    for _ in range(n):
        start = time.perf_counter()
        col.find_one({"_id": doc_id})
        timings.append((time.perf_counter() - start) * 1000)
    return timings


def run_threaded(col, doc_id, n_threads=10, calls_per_thread=100):
    all_timings = []
    lock = threading.Lock()

    def worker():
        t = find_one_timings(col, doc_id, calls_per_thread)
        with lock:
            all_timings.extend(t)

    threads = [threading.Thread(target=worker) for _ in range(n_threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return all_timings


def row(label, mode, t):
    mean = statistics.mean(t)
    print(json.dumps({"label": label, "mode": mode, "n": len(t), "mean_ms": mean,
                      "stdev_pct": 100 * statistics.stdev(t) / mean}), flush=True)


def main():
    uri, label = sys.argv[1], sys.argv[2]
    client = MongoClient(uri)
    col = client["benchmark_db"]["test_col"]
    doc_id = "test-doc-1"
    if "--no-upsert" not in sys.argv:
        col.replace_one({"_id": doc_id}, {"_id": doc_id, "value": 42}, upsert=True)
    row(label, "sequential", find_one_timings(col, doc_id, 1000)[1:])
    row(label, "threaded", run_threaded(col, doc_id))
    client.close()


if __name__ == "__main__":
    main()
