#!/usr/bin/python3
"""driver_bigdoc.py -- pymongo 3.11 writes documents of several MB and an
insert_many whose messages come near maxMessageSizeBytes (48 000 000), then
reads back a small document.  One JSON line per call (result or error), so
a run through `mtrace capture` and a run against `mtrace replay` of that
trace can be compared line by line.

    driver_bigdoc.py URI
"""
import json
import sys

from pymongo import MongoClient
from pymongo.errors import PyMongoError

MB = 1 << 20


def main():
    client = MongoClient(sys.argv[1], serverSelectionTimeoutMS=5000)
    col = client.benchmark_db.test_col
    calls = [
        ("doc_8mb", lambda: col.insert_one({"_id": "big8", "pad": "y" * (8 * MB)}).acknowledged),
        # 3 x 15 MiB: pymongo packs what fits under 48 000 000 bytes into
        # one OP_MSG (kind-1 sequence) and the rest into another
        ("near_max_message", lambda: len(col.insert_many(
            [{"_id": "n%d" % i, "pad": chr(ord("a") + i) * (15 * MB)} for i in range(3)]).inserted_ids)),
        ("update_4mb", lambda: col.update_one({"_id": "test-doc-1"},
                                              {"$set": {"blob": "z" * (4 * MB)}}).modified_count),
        ("find_one", lambda: col.find_one({"_id": "test-doc-1"})),
    ]
    for label, fn in calls:
        try:
            out = {"call": label, "ok": fn()}
        except PyMongoError as e:
            out = {"call": label, "error": type(e).__name__, "msg": str(e)[:200]}
        print(json.dumps(out, sort_keys=True), flush=True)
    client.close()


if __name__ == "__main__":
    main()
