#!/usr/bin/python3
"""pcap_workload.py PORT -- the traffic bench_pcap.sh captures as its seed:
pymongo against MockupDB (mockmongo.py): point reads, inserts, and cursors
of 250 documents read in batches (getMore), on a few connections."""
import sys
import threading

import pymongo


def work(port, n):
    client = pymongo.MongoClient("127.0.0.1", port, maxPoolSize=1,
                                 heartbeatFrequencyMS=60000)
    db = client.benchmark_db
    for i in range(n):
        db.test_col.find_one({"_id": "test-doc-1"})
        if i % 2 == 0:
            db.test_col.insert_one({"_id": "w-%d" % i, "pad": "x" * (i % 300)})
        if i % 10 == 0:
            for _ in db.many.find({}, batch_size=50):
                pass
    client.close()


def main():
    port = int(sys.argv[1])
    ts = [threading.Thread(target=work, args=(port, 150)) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


if __name__ == "__main__":
    main()
