#!/usr/bin/python3
"""pcap_burst_client.py PORT N THREADS -- the burst of test_pcap_live.sh:
THREADS pymongo threads share one MongoClient against MockupDB
(mockmongo.py) on 127.0.0.1:PORT and run N find_one calls in total as fast
as they can.  Prints "c2s find N": what was sent, for the test to find in
the trace."""
import sys
import threading

import pymongo


def main():
    port, total, nthreads = (int(a) for a in sys.argv[1:4])
    client = pymongo.MongoClient("127.0.0.1", port, serverSelectionTimeoutMS=5000,
                                 heartbeatFrequencyMS=60000, maxPoolSize=nthreads)
    coll = client.benchmark_db.test_col
    errors = []

    def worker(n):
        try:
            for _ in range(n):
                doc = coll.find_one({"_id": "test-doc-1"})
                assert doc["value"] == 42, doc
        except Exception as e:  # reported below, the test fails on it
            errors.append(repr(e))

    share = [total // nthreads + (1 if i < total % nthreads else 0)
             for i in range(nthreads)]
    threads = [threading.Thread(target=worker, args=(n,)) for n in share]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    client.close()
    if errors:
        print("error", errors[0], file=sys.stderr)
        sys.exit(1)
    print("c2s find", total)


if __name__ == "__main__":
    main()
