"""test_capture_pymongo.py -- pymongo through `mtrace capture` to MockupDB.

Sequential calls, then 10 threads, then a multi-batch cursor, an insert and
a failing command.  Checks: every call answered with the right document;
the trace holds exactly one request and one reply per client command
(request ids seen by pymongo's command monitoring), replies answer their
requests; every handshake has its reply; recorded bytes (summary and sum of
dump lengths) equal forwarded bytes; nothing dropped; the file is 0600.
Then 16 connections open at once through a 2-loop proxy: 8 per loop.
"""
import os
import re
import stat
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capture_lib import Env, Recorder, check, check_pairs, msgs, summary_bytes  # noqa: E402

from pymongo import MongoClient  # noqa: E402
from pymongo.errors import OperationFailure  # noqa: E402

DOC = {"_id": "test-doc-1", "value": 42}


def main():
    with Env() as env:
        mock = env.start_mock()
        cap = env.start_capture(mock)
        rec = Recorder()
        client = MongoClient("mongodb://127.0.0.1:%d/?directConnection=true" % cap.port,
                             serverSelectionTimeoutMS=5000, event_listeners=[rec])
        col = client.benchmark_db.test_col
        col.replace_one({"_id": DOC["_id"]}, DOC, upsert=True)
        n_seq = 40
        for _ in range(n_seq):
            check(col.find_one({"_id": DOC["_id"]}) == DOC, "sequential find_one: wrong document")

        errors = []

        def worker():
            try:
                for _ in range(20):
                    got = col.find_one({"_id": DOC["_id"]})
                    if got != DOC:
                        errors.append(got)
            except Exception as e:  # reported below
                errors.append(repr(e))

        threads = [threading.Thread(target=worker) for _ in range(10)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        check(not errors, "threaded find_one failed: %r" % errors[:3])

        many = list(client.benchmark_db.many.find().batch_size(100))
        check(len(many) == 250 and many[249] == {"_id": 249, "x": 249 * 249},
              "cursor over benchmark_db.many: got %d docs" % len(many))
        res = client.benchmark_db.other.insert_one({"k": 1})
        check(res.acknowledged, "insert_one not acknowledged")
        try:
            client.benchmark_db.command("fail_me")
            check(False, "fail_me succeeded")
        except OperationFailure as e:
            check(e.code == 2, "fail_me: code %r" % e.code)
        client.close()

        text = cap.stop()
        mode = stat.S_IMODE(os.stat(cap.out).st_mode)
        check(mode == 0o600, "trace mode %o, want 600" % mode)

        recs = env.dump(cap.out)
        check(recs[0]["type"] == "header" and recs[0]["source"] == "proxy", "no proxy header")
        check(recs[-1]["type"] == "end", "trace does not end with an end record")
        check(rec.count("find") == n_seq + 200 + 1, "client find count %d" % rec.count("find"))
        check(rec.count("getMore") == 2, "client getMore count %d" % rec.count("getMore"))
        # exactly one request and one reply per client command
        check_pairs(recs, rec.cmds, "pymongo")
        # and nothing else but handshakes/heartbeats (each with its reply);
        # counted by (request id, command): pymongo 3.11's random ids may
        # collide, between commands or with a (not monitored) handshake
        started = {}
        for rid, name in rec.cmds:
            started[(rid, name.lower())] = started.get((rid, name.lower()), 0) + 1
        hellos = []
        for r in msgs(recs, "c2s"):
            key = (r["request_id"], r["cmd"].lower())
            if started.get(key, 0) > 0:
                started[key] -= 1
                continue
            check(r["cmd"].lower() in ("ismaster", "hello"),
                  "unexpected request %s in the trace" % r["cmd"])
            hellos.append((r["request_id"], r["cmd"]))
        check_pairs(recs, hellos, "handshake")
        check(len(msgs(recs)) == 2 * (len(rec.cmds) + len(hellos)),
              "trace has %d messages for %d exchanges" % (len(msgs(recs)),
                                                          len(rec.cmds) + len(hellos)))
        finds = [r for r in msgs(recs, "c2s") if r["cmd"] == "find" and r["coll"] == "test_col"]
        check(len(finds) == n_seq + 200, "%d find on test_col in the trace" % len(finds))
        for r in msgs(recs):
            check(not r["trace_flags"], "message flagged %r" % r["trace_flags"])

        recorded, forwarded, dropped = summary_bytes(text)
        total = sum(r["len"] for r in msgs(recs))
        check(recorded == forwarded == total,
              "recorded %d, forwarded %d, dump total %d" % (recorded, forwarded, total))
        check(dropped == 0, "dropped %d" % dropped)
        opens = [r for r in recs if r["type"] == "conn_open"]
        closes = [r for r in recs if r["type"] == "conn_close"]
        check(len(opens) == len(closes) >= 2, "%d opens, %d closes" % (len(opens), len(closes)))
        print("ok: %d client commands, %d handshakes, %d messages, %d bytes"
              % (len(rec.cmds), len(hellos), len(msgs(recs)), total))

        check_balance(env, mock)


def check_balance(env, mock):
    """Connections are spread evenly over the loops: 8 clients (a monitor
    and an application connection each, all open at once) through a proxy
    with 2 loops give 8 connections to each, whatever SO_REUSEPORT's hash
    chose."""
    cap = env.start_capture(mock, extra=("--threads", "2"))
    clients = [MongoClient("mongodb://127.0.0.1:%d/?directConnection=true" % cap.port,
                           serverSelectionTimeoutMS=5000) for _ in range(8)]
    for c in clients:
        check(c.admin.command("ping").get("ok") == 1, "ping through the proxy failed")
    for c in clients:
        c.close()
    text = cap.stop()
    m = re.search(r"loops: 2, connections per loop: (\d+) / (\d+)", text)
    check(m is not None, "no per-loop line in the summary:\n" + text)
    a, b = int(m.group(1)), int(m.group(2))
    check(a + b == 16 and abs(a - b) <= 1, "connections per loop %d / %d" % (a, b))
    print("ok: connections per loop %d / %d" % (a, b))


if __name__ == "__main__":
    main()
