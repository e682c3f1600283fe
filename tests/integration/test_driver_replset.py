#!/usr/bin/python3
"""test_driver_replset.py -- a trace of a replica-set member replayed.

A capture through `mtrace capture` (pymongo with directConnection, as
docs/capture.md says) of the primary of a 3-member set (driver_rsmock.py)
records hello replies that name the set's members, arbiter and primary.
Replayed as they were, they send a driver that discovers the set (the
Node.js driver's default; pymongo with replicaSet=rs0) to those hosts:
unreachable here, the production members in real life.  Replay must
present itself as the set's only member: hosts, me and primary name the
address the client connected to, setName and the rest are kept.
Checks: pymongo's retryable writes (txnNumber, lsid) and finds replayed;
the Node.js driver without directConnection and pymongo with replicaSet=rs0
are served by replay; replay's hello names only itself.
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
c = MongoClient(sys.argv[1], serverSelectionTimeoutMS=5000, retryWrites=True)
col = c.benchmark_db.test_col
out = [col.insert_one({"a": 1}).acknowledged,
       col.update_one({"_id": "test-doc-1"}, {"$set": {"v": 2}}).modified_count,
       col.find_one({"_id": "test-doc-1"})]
hello = c.admin.command("isMaster")
out.append({k: hello.get(k) for k in ("setName", "hosts", "me", "primary", "arbiters")})
print(json.dumps(out, sort_keys=True))
"""

NODE = r"""
const { MongoClient } = require('./node_modules/mongodb');
(async () => {
  const c = new MongoClient(process.argv[1], { serverSelectionTimeoutMS: 4000 });
  try {
    const d = await c.db('benchmark_db').collection('test_col').findOne({ _id: 'test-doc-1' });
    console.log(JSON.stringify({ ok: d, type: c.topology.description.type }));
  } catch (e) { console.log(JSON.stringify({ error: e.name + ': ' + String(e.message).slice(0, 200) })); }
  await c.close();
})();
"""


def pymongo(uri):
    r = subprocess.run([PYTHON, "-c", WORKLOAD, uri], capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, "pymongo %s: %s" % (uri, r.stderr[-1500:]))
    return json.loads(r.stdout)


def main():
    with Env() as env:
        cap = env.start_capture(driver_rsmock.start(env))
        rec = pymongo("mongodb://127.0.0.1:%d/?directConnection=true" % cap.port)
        cap.stop()
        check(rec[3]["setName"] == "rs0" and len(rec[3]["hosts"]) == 3, "recorded hello: %r" % rec[3])
        inserts = [r for r in env.dump(cap.out) if r.get("type") == "msg" and r.get("cmd") == "insert"
                   and r["dir"] == "c2s"]
        check(inserts and "txnNumber" in inserts[0]["body"], "no retryable insert recorded: %r" % inserts)

        rep, port, log = env.start_replay(cap.out)
        me = "127.0.0.1:%d" % port
        got = pymongo("mongodb://%s/?directConnection=true" % me)
        check(got[:3] == rec[:3], "replayed answers differ: %r vs %r" % (got[:3], rec[:3]))
        want = {"setName": "rs0", "hosts": [me], "me": me, "primary": me, "arbiters": None}
        check(got[3] == want, "replay's hello: %r, want %r" % (got[3], want))
        # drivers that discover the set
        got = pymongo("mongodb://%s/?replicaSet=rs0" % me)
        check(got[:3] == rec[:3], "pymongo replicaSet=rs0: %r" % got)
        r = subprocess.run(["node", "-e", NODE, "mongodb://%s/" % me], cwd=HERE,
                           capture_output=True, text=True, timeout=60)
        check(r.returncode == 0, "node: %s" % r.stderr[-1500:])
        node = json.loads(r.stdout)
        check(node.get("ok") == {"_id": "test-doc-1", "value": 42} and
              node.get("type") == "ReplicaSetWithPrimary", "node without directConnection: %r" % node)
        rep.terminate()
        check(rep.wait(10) == 0, "replay exit: " + open(log).read())
        text = open(log).read()
        check("missed 0," in text, "replay missed: " + text[-1500:])
        print("ok: replica-set trace replayed as a one-member set at %s (pymongo direct and "
              "replicaSet=rs0, node discovering)" % me)


if __name__ == "__main__":
    main()
