#!/usr/bin/python3
"""replay_workload.py -- the pymongo workload the replay tests run twice:
against MockupDB through `mtrace capture`, then against `mtrace replay` of
that trace.  Prints one JSON line per call (what came back, or the error),
so the two runs can be compared line by line.

    replay_workload.py URI [--threads N] [--rounds N] [--miss]

--miss adds a query that no trace of this workload holds (it must get
mtrace replay's miss error).
"""
import argparse
import json
import sys
import threading

from bson import json_util
from pymongo import MongoClient
from pymongo.errors import OperationFailure
from pymongo.write_concern import WriteConcern


def calls(db):
    """(label, thunk) pairs; deterministic given the same server answers."""
    col = db.test_col
    many = db.many
    return [
        ("ping", lambda: db.command("ping")["ok"]),
        ("find_one", lambda: col.find_one({"_id": "test-doc-1"})),
        ("find_empty", lambda: list(col.find({"_id": "nope"}))),
        ("find_all", lambda: list(col.find({}))),
        ("many_3_batches", lambda: [d["x"] for d in many.find({}, batch_size=100)]),
        ("many_limit", lambda: [d["_id"] for d in many.find({}, batch_size=50, limit=120)]),
        ("many_killed", lambda: first_and_close(many.find({}, batch_size=10))),
        ("insert_one", lambda: col.insert_one({"value": 7}).acknowledged),
        ("insert_many", lambda: col.insert_many([{"v": 1}, {"v": 2}]).acknowledged),
        ("insert_w0", lambda: col.with_options(write_concern=WriteConcern(w=0))
         .insert_one({"value": 8}).acknowledged),
        ("update", lambda: col.update_one({"_id": "test-doc-1"}, {"$set": {"value": 43}}).modified_count),
        ("delete", lambda: col.delete_many({"v": 1}).deleted_count),
        ("aggregate", lambda: list(many.aggregate([{"$count": "count"}]))),
        ("fail_me", lambda: db.command("fail_me")),
    ]


def first_and_close(cur):
    d = next(cur)
    cur.close()
    return d


def run_one(label, fn):
    try:
        out = {"call": label, "ok": fn()}
    except OperationFailure as e:
        out = {"call": label, "error": e.code, "msg": str(e)[:60]}
    return json.dumps(out, default=json_util.default, sort_keys=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("uri")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--miss", action="store_true")
    args = ap.parse_args()
    client = MongoClient(args.uri, serverSelectionTimeoutMS=5000)
    db = client.benchmark_db
    lines = []
    lock = threading.Lock()

    def worker(tag):
        for r in range(args.rounds):
            todo = calls(db)
            if args.miss:
                todo.append(("miss", lambda: db.test_col.find_one({"_id": "never-recorded"})))
            for label, fn in todo:
                line = run_one(label, fn)
                with lock:
                    lines.append((tag, r, label, line))

    if args.threads:
        ts = [threading.Thread(target=worker, args=(i,)) for i in range(args.threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        lines.sort()
    else:
        worker(0)
    for _, _, _, line in lines:
        print(line)
    client.close()


if __name__ == "__main__":
    sys.exit(main())
