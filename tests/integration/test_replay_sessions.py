#!/usr/bin/python3
"""test_replay_sessions.py -- explicit sessions replayed (pymongo; the
Node.js driver for the causal reads):
causally consistent reads in another order than recorded, and transactions.

pymongo's explicit sessions are causally consistent: every read after the
session's first sends readConcern {afterClusterTime: T}, T the
operationTime of the session's previous reply.  A trace of a replica-set
member (driver_rsmock.py, which stamps operationTime like a member) through
`mtrace capture` holds find A without readConcern and find B with
afterClusterTime; a workload that runs B first sends B without it and A
with a T of B's.  Replay's default rules ignore readConcern.afterClusterTime
(keeping the rest of the read concern), so both reads match; with
`--keep-field readConcern.afterClusterTime` the first read misses, and the
miss names readConcern.
A transaction (with_transaction: insert and find with startTransaction,
autocommit, txnNumber, then commitTransaction) recorded once is replayed
twice in one session: the second has txnNumber 2 where the trace has 1.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import driver_rsmock  # noqa: E402
from capture_lib import PYTHON, TOP, Env, check  # noqa: E402

HERE = os.path.join(TOP, "tests", "integration")

WORKLOAD = r"""
import json, sys
from pymongo import MongoClient
c = MongoClient(sys.argv[1], serverSelectionTimeoutMS=5000)
col = c.benchmark_db.test_col
out = []


def txn(s):
    col.insert_one({"a": 1}, session=s)
    return col.find_one({"_id": "test-doc-1"}, session=s)


with c.start_session() as s:
    for f in sys.argv[2:]:
        try:
            out.append(s.with_transaction(txn) if f == "TXN" else
                       col.find_one({"_id": f}, session=s))
        except Exception as e:
            out.append("error: %s" % str(e)[:300])
print(json.dumps(out, sort_keys=True))
"""


NODE = r"""
const { MongoClient } = require('./node_modules/mongodb');
(async () => {
  const c = new MongoClient(process.argv[1], { serverSelectionTimeoutMS: 4000, directConnection: true });
  const col = c.db('benchmark_db').collection('test_col');
  const out = [];
  const s = c.startSession();  // causally consistent by default
  for (const id of process.argv.slice(2)) {
    try { out.push(await col.findOne({ _id: id }, { session: s })); }
    catch (e) { out.push('error: ' + String(e.message).slice(0, 300)); }
  }
  await s.endSession();
  await c.close();
  console.log(JSON.stringify(out));
})();
"""


def node(uri, *ids):
    r = subprocess.run(["node", "-e", NODE, uri] + list(ids), cwd=HERE, capture_output=True,
                       text=True, timeout=60)
    check(r.returncode == 0, "node %s: %s" % (uri, r.stderr[-1500:]))
    return json.loads(r.stdout)


def pymongo(uri, *ids):
    r = subprocess.run([PYTHON, "-c", WORKLOAD, uri] + list(ids), capture_output=True,
                       text=True, timeout=60)
    check(r.returncode == 0, "pymongo %s: %s" % (uri, r.stderr[-1500:]))
    return json.loads(r.stdout)


def replay(env, trace, name, extra, *ids, client=None):
    """Replays trace to client (pymongo) reading ids; returns (answers,
    summary, log)."""
    summ = env.path(name + ".json")
    rep, port, log = env.start_replay(trace, ["--summary-json", summ] + extra,
                                      log=env.path(name + ".log"))
    got = (client or pymongo)("mongodb://127.0.0.1:%d/?directConnection=true" % port, *ids)
    rep.terminate()
    check(rep.wait(10) == 0, "replay exit: " + open(log).read())
    with open(summ) as f:
        return got, json.load(f), open(log).read()


def main():
    with Env() as env:
        cap = env.start_capture(driver_rsmock.start(env))
        uri = "mongodb://127.0.0.1:%d/?directConnection=true" % cap.port
        rec = pymongo(uri, "test-doc-1", "other")
        doc = {"_id": "test-doc-1", "value": 42}
        check(rec == [doc, None], "recorded answers: %r" % rec)
        rec_node = node("mongodb://127.0.0.1:%d/" % cap.port, "test-doc-1", "other")
        check(rec_node == [doc, None], "recorded answers (node): %r" % rec_node)
        rec_txn = pymongo(uri, "TXN")
        check(rec_txn == [doc], "recorded transaction: %r" % rec_txn)
        cap.stop()
        reqs = [r for r in env.dump(cap.out) if r.get("type") == "msg" and r["dir"] == "c2s"]
        rcs = [json.dumps(r["body"].get("readConcern")) for r in reqs if r.get("cmd") == "find"]
        check(len(rcs) == 5 and rcs[0] == rcs[2] == "null" and "afterClusterTime" in rcs[1] and
              "afterClusterTime" in rcs[3],
              "recorded finds' readConcern: %r" % rcs)
        txn = [r for r in reqs if "txnNumber" in r["body"]]
        check([r.get("cmd") for r in txn] == ["insert", "find", "commitTransaction"] and
              txn[0]["body"].get("startTransaction") is True,
              "recorded transaction: %r" % [(r.get("cmd"), sorted(r["body"])) for r in txn])

        got, summ, log = replay(env, cap.out, "default", [], "other", "test-doc-1")
        check(got == [None, doc], "reads in the other order: %r (log: %s)" % (got, log[-1500:]))
        check(summ["missed"] == 0 and summ["matched"] >= 2, "default rules: %r" % summ)
        got, summ, log = replay(env, cap.out, "node", [], "other", "test-doc-1", client=node)
        check(got == [None, doc] and summ["missed"] == 0,
              "node, reads in the other order: %r %r (log: %s)" % (got, summ, log[-1500:]))
        got, summ, log = replay(env, cap.out, "txn", [], "TXN", "TXN")
        check(got == [doc, doc] and summ["missed"] == 0,
              "two transactions in one session: %r %r (log: %s)" % (got, summ, log[-1500:]))

        got, summ, log = replay(env, cap.out, "keep", ["--keep-field", "readConcern.afterClusterTime"],
                                "other", "test-doc-1")
        # the first read misses; its error reply has no operationTime, so the
        # session's second read goes without afterClusterTime, and matches
        check(summ["missed"] == 1 and isinstance(got[0], str) and "readConcern" in got[0],
              "with afterClusterTime kept, the first read should miss naming readConcern: %r %r"
              % (summ, got))
        print("ok: causally consistent sessions (pymongo, Node.js) replayed in another order matched "
              "2 of 2 reads each "
              "(a miss with --keep-field readConcern.afterClusterTime); a recorded transaction "
              "replayed twice in one session")


if __name__ == "__main__":
    main()
