#!/usr/bin/python3
"""mockmongo.py -- a MockupDB server scripted to answer like a MongoDB 7.0
standalone, for mtrace's integration tests and for regenerating the sample
trace.

    /usr/bin/python3 tests/integration/mockmongo.py [--port P] [--topology-version]

Prints "READY <port>" on stdout once listening, serves until SIGTERM/SIGINT,
then exits 0.  driver_rsmock.py reuses Mongo70 and serve().

What it answers (everything else: ok 0, code 59 CommandNotFound):
  hello / isMaster / ismaster  (OP_QUERY on admin.$cmd and OP_MSG)
  ping, buildInfo, endSessions, getParameter
  find       benchmark_db.test_col: {_id: "test-doc-1", value: 42} when the
             filter matches it (or is empty), else an empty batch.
             benchmark_db.many: N documents {_id: i, x: i*i} in batches
             of batchSize (default 101) with a server cursor; getMore pages.
  getMore, killCursors
  insert / update / delete  acknowledged with n
  findAndModify  value: the test_col document before the change when the
             query's _id is its _id, else null
  aggregate  benchmark_db.many: [{count: N}]
  count      n: N
  fail_me    any database: ok 0 code 2 BadValue errmsg "fail_me requested"
"""
import argparse
import datetime
import os
import signal
import sys
import threading

from bson.int64 import Int64
from bson.objectid import ObjectId
from mockupdb import MockupDB, OpMsg

TEST_DOC = {"_id": "test-doc-1", "value": 42}
MANY_N = 250


def cmd_error(request, errmsg, code, code_name):
    """A command error as mongod sends it: ok 0, errmsg, code, codeName.
    (MockupDB's request.fail() answers ok 1 with $err, which drivers take
    for success.)"""
    return request.replies({"ok": 0, "errmsg": errmsg, "code": code,
                            "codeName": code_name})


class Mongo70:
    def __init__(self, topology_version):
        self.lock = threading.Lock()
        self.conn_ids = {}
        self.next_conn = 1
        self.cursors = {}
        self.next_cursor = 1000
        self.process_id = ObjectId()
        self.topology_version = topology_version

    def hello_doc(self, request):
        with self.lock:
            key = request.client_port
            if key not in self.conn_ids:
                self.conn_ids[key] = self.next_conn
                self.next_conn += 1
            conn_id = self.conn_ids[key]
        doc = {
            "isWritablePrimary": True,
            "topologyVersion": {"processId": self.process_id,
                                "counter": Int64(0)},
            "maxBsonObjectSize": 16777216,
            "maxMessageSizeBytes": 48000000,
            "maxWriteBatchSize": 100000,
            "localTime": datetime.datetime.now(datetime.timezone.utc),
            "logicalSessionTimeoutMinutes": 30,
            "connectionId": conn_id,
            "minWireVersion": 0,
            "maxWireVersion": 21,
            "readOnly": False,
        }
        if not self.topology_version:
            del doc["topologyVersion"]
        cmd = request.command_name or ""
        if cmd.lower() == "ismaster":
            doc["ismaster"] = True
            del doc["isWritablePrimary"]
        if request.doc.get("helloOk"):
            doc["helloOk"] = True
        return doc

    def handle(self, request):
        cmd = request.command_name or ""
        doc = request.doc
        db = request.namespace.split(".")[0] if request.namespace else ""
        if cmd in ("hello", "isMaster", "ismaster"):
            return request.replies(self.hello_doc(request))
        if cmd == "ping":
            return request.ok()
        if cmd == "buildInfo" or cmd == "buildinfo":
            return request.ok(version="7.0.14", versionArray=[7, 0, 14, 0],
                              bits=64, maxBsonObjectSize=16777216)
        if cmd in ("endSessions", "getParameter"):
            return request.ok()
        if cmd == "fail_me":
            return cmd_error(request, "fail_me requested", 2, "BadValue")
        if cmd == "find":
            return self.find(request, db, doc)
        if cmd == "getMore":
            return self.get_more(request, db, doc)
        if cmd == "killCursors":
            ids = list(doc.get("cursors", []))
            with self.lock:
                for c in ids:
                    self.cursors.pop(int(c), None)
            return request.ok(cursorsKilled=ids, cursorsNotFound=[],
                              cursorsAlive=[], cursorsUnknown=[])
        if cmd in ("insert", "delete"):
            n = len(doc.get("documents", doc.get("deletes", [])))
            if isinstance(request, OpMsg) and request.flags & 2:
                return True  # unacknowledged: moreToCome, no reply
            return request.ok(n=n)
        if cmd == "update":
            n = len(doc.get("updates", []))
            return request.ok(n=n, nModified=n)
        if cmd == "findAndModify":
            hit = doc.get("query", {}).get("_id") == TEST_DOC["_id"]
            return request.ok(value=TEST_DOC if hit else None,
                              lastErrorObject={"n": int(hit), "updatedExisting": hit})
        if cmd == "count":
            return request.ok(n=MANY_N)
        if cmd == "aggregate":
            return request.ok(cursor={"id": Int64(0), "ns": db + "." + doc["aggregate"],
                                      "firstBatch": [{"count": MANY_N}]})
        return cmd_error(request, "no such command: '%s'" % cmd, 59,
                         "CommandNotFound")

    def find(self, request, db, doc):
        coll = doc["find"]
        ns = db + "." + coll
        flt = doc.get("filter", {})
        if coll == "many":
            docs = [{"_id": i, "x": i * i} for i in range(MANY_N)]
            batch = int(doc.get("batchSize", 101))
            if doc.get("limit"):
                docs = docs[: int(doc["limit"])]
            first, rest = docs[:batch], docs[batch:]
            cid = 0
            if rest:
                with self.lock:
                    cid = self.next_cursor
                    self.next_cursor += 1
                    self.cursors[cid] = (ns, rest)
            return request.ok(cursor={"id": Int64(cid), "ns": ns, "firstBatch": first})
        match = [TEST_DOC] if (not flt or flt.get("_id") == TEST_DOC["_id"]) else []
        return request.ok(cursor={"id": Int64(0), "ns": ns, "firstBatch": match})

    def get_more(self, request, db, doc):
        cid = int(doc["getMore"])
        batch = int(doc.get("batchSize", 101))
        with self.lock:
            entry = self.cursors.get(cid)
            if entry is None:
                return cmd_error(request, "cursor id %d not found" % cid, 43,
                                 "CursorNotFound")
            ns, rest = entry
            now, rest = rest[:batch], rest[batch:]
            if rest:
                self.cursors[cid] = (ns, rest)
            else:
                del self.cursors[cid]
                cid = 0
        return request.ok(cursor={"id": Int64(cid), "ns": ns, "nextBatch": now})


def serve(logic, port=0, on_port=None):
    """Serves logic.handle (a Mongo70) on 127.0.0.1:port (0: the kernel
    picks): calls on_port(port) once listening, prints "READY <port>",
    serves until SIGTERM/SIGINT, then exits the process with status 0."""
    server = MockupDB(port=port or None, request_timeout=int(1e6))
    server.autoresponds(logic.handle)
    port = server.run()
    if on_port is not None:
        on_port(port)
    print("READY %d" % port, flush=True)

    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: done.set())
    signal.signal(signal.SIGINT, lambda *a: done.set())
    while not done.wait(0.2):
        pass
    server.stop()
    os._exit(0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--topology-version", action="store_true",
                    help="include topologyVersion in hello (not for the Node.js driver)")
    args = ap.parse_args()
    serve(Mongo70(args.topology_version), args.port)


if __name__ == "__main__":
    main()
