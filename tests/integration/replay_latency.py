#!/usr/bin/python3
"""replay_latency.py N URI [URI...] -- seed 000's sequential find_one, N
calls per server; with several URIs the calls alternate between them
(one client per URI), so load elsewhere on the machine hits every server's
numbers alike.  The first call per server is a warm-up.  Prints one JSON
line per URI: {"uri", "n", "mean_ms", "p50_ms"}."""
import json
import statistics
import sys
import time

from pymongo import MongoClient

n = int(sys.argv[1])
uris = sys.argv[2:]
cols = [MongoClient(u, serverSelectionTimeoutMS=5000).benchmark_db.test_col for u in uris]
times = [[] for _ in uris]
for _ in range(n):
    for i, col in enumerate(cols):
        s = time.perf_counter()
        doc = col.find_one({"_id": "test-doc-1"})
        times[i].append((time.perf_counter() - s) * 1000)
        assert doc == {"_id": "test-doc-1", "value": 42}, doc
for u, t in zip(uris, times):
    t = t[1:]
    print(json.dumps({"uri": u, "n": len(t), "mean_ms": statistics.mean(t),
                      "p50_ms": statistics.median(t)}))
for col in cols:
    col.database.client.close()
