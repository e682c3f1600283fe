#!/usr/bin/python3
"""fill_workload.py PORT -- pymongo through a capture proxy whose trace runs
out of room (test_capture_diskfull.sh: a file size limit; test_fault_enospc.sh:
a full tmpfs).  20 finds that fit (their frames are complete before the
limit: the writer closes a frame at most 100 ms after its start), ~1.6 MB of
incompressible finds far past it, then 20 more finds.  Every call must be
answered: the proxy forwards on when its trace cannot be written."""
import os
import sys
import time

from pymongo import MongoClient

c = MongoClient("mongodb://127.0.0.1:%s/?directConnection=true" % sys.argv[1],
                serverSelectionTimeoutMS=5000)
col = c.benchmark_db.test_col
for _ in range(20):
    assert col.find_one({"_id": "test-doc-1"})["value"] == 42
time.sleep(0.4)
for i in range(400):
    col.find_one({"_id": "test-doc-1", "pad": os.urandom(2000).hex()})
    if i % 100 == 0:
        time.sleep(0.15)  # let the writer close frames (every 100 ms)
for _ in range(20):
    assert col.find_one({"_id": "test-doc-1"})["value"] == 42
print("pymongo: 440 calls through the proxy after the trace ran out of room")
