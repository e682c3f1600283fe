#!/usr/bin/python3
"""matrix_workload.py -- the pymongo side of the cross-driver replay
matrix (test_replay_matrix.py; matrix_workload.js and
tests/helpers/mongoc_matrix.c are the same calls for the Node.js driver and
libmongoc).  Prints one JSON line per call: {"call": NAME, "ok": RESULT} or
{"call": NAME, "error": CODE}.

    matrix_workload.py URI
"""
import json
import sys

from bson import json_util
from pymongo import MongoClient
from pymongo.errors import OperationFailure


def calls(db):
    col, many = db.test_col, db.many
    return [
        ("find_one", lambda: col.find_one({"_id": "test-doc-1"})),
        ("find_empty", lambda: list(col.find({"_id": "nope"}))),
        ("find_batches", lambda: [d["x"] for d in many.find({}, batch_size=100)]),
        ("aggregate", lambda: list(many.aggregate([{"$count": "count"}]))),
        ("count", lambda: many.estimated_document_count()),
        ("insert", lambda: col.insert_one({"_id": "ins-1", "value": 7}).acknowledged),
        ("update", lambda: col.update_one({"_id": "test-doc-1"},
                                          {"$set": {"value": 43}}).modified_count),
        ("find_and_modify", lambda: col.find_one_and_update({"_id": "test-doc-1"},
                                                            {"$set": {"value": 44}})),
        ("delete", lambda: col.delete_one({"_id": "ins-1"}).deleted_count),
        ("fail", lambda: db.command("fail_me")),
    ]


def main():
    client = MongoClient(sys.argv[1], serverSelectionTimeoutMS=5000)
    for name, fn in calls(client.benchmark_db):
        try:
            out = {"call": name, "ok": fn()}
        except OperationFailure as e:
            out = {"call": name, "error": e.code}
        print(json.dumps(out, default=json_util.default, sort_keys=True), flush=True)
    client.close()


if __name__ == "__main__":
    main()
