#!/usr/bin/python3
"""pcap_live_client.py PORT -- the client side of test_pcap_live.sh: pymongo
runs a fixed set of calls against MockupDB (mockmongo.py) on 127.0.0.1:PORT
and prints how many of each command it sent, as "c2s <command> <count>"
lines, for the test to find in the trace."""
import collections
import sys

import pymongo


def main():
    port = int(sys.argv[1])
    sent = collections.Counter()
    client = pymongo.MongoClient("127.0.0.1", port, serverSelectionTimeoutMS=5000,
                                 heartbeatFrequencyMS=60000)
    db = client.benchmark_db
    for _ in range(3):
        assert client.admin.command("ping")["ok"] == 1
        sent["ping"] += 1
    for _ in range(5):
        doc = db.test_col.find_one({"_id": "test-doc-1"})
        assert doc["value"] == 42, doc
        sent["find"] += 1
    for i in range(2):
        db.test_col.insert_one({"_id": "live-%d" % i, "v": i})
        sent["insert"] += 1
    # 250 documents in batches of 100: one find and two getMores
    n = sum(1 for _ in db.many.find({}, batch_size=100))
    assert n == 250, n
    sent["find"] += 1
    sent["getMore"] += 2
    client.close()
    for cmd, n in sorted(sent.items()):
        print("c2s", cmd, n)


if __name__ == "__main__":
    main()
