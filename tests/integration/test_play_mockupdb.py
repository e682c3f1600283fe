"""test_play_mockupdb.py -- `mtrace play` against MockupDB scripted as a
MongoDB 7.0 standalone with SCRAM-SHA-256 authentication.

pymongo (authenticated, causally consistent session) runs a workload
through `mtrace capture` to one such server (M1): a cursor over several
getMore batches, a cursor closed early (killCursors), two
transaction-shaped sequences (insert with startTransaction, find,
commitTransaction under one lsid and txnNumber), a find with
readConcern.afterClusterTime, an unacknowledged insert (moreToCome).
M1 stamps $clusterTime T1 on its replies.  The trace is then played into
a fresh server (M2: other cursor ids, $clusterTime T2) with
--username/--password.  Checks on what M2 received:
  - every connection made its own handshake (client application name
    "mtrace play", no recorded speculativeAuthenticate) and authenticated
    itself before any other command (M2 answers 13 Unauthorized otherwise);
  - getMore and killCursors carry M2's cursor ids, never M1's, and no
    getMore hit an unknown cursor;
  - no recorded lsid reached M2; the transaction commands of one recorded
    session share one fresh lsid, their txnNumbers are monotonic (1, then
    2);
  - $clusterTime and afterClusterTime are never M1's T1;
  - the w:0 insert arrived with moreToCome;
  - play exits 0, reports 0 unanswered and no reply differing in shape.
"""
import base64
import hashlib
import hmac
import os
import re
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capture_lib import MTRACE, Env, check  # noqa: E402
from mockmongo import Mongo70, cmd_error  # noqa: E402

from bson.int64 import Int64  # noqa: E402
from bson.timestamp import Timestamp  # noqa: E402
from mockupdb import MockupDB, OpMsg  # noqa: E402
from pymongo import MongoClient  # noqa: E402
from pymongo.read_concern import ReadConcern  # noqa: E402
from pymongo.write_concern import WriteConcern  # noqa: E402

USER, PASSWORD, ITER = "app", "s3cret", 4096
SALT = b"mtrace-play-salt"


def hm(key, msg):
    return hmac.new(key, msg, hashlib.sha256).digest()


class Mongo70Auth(Mongo70):
    """Mongo70 with SCRAM-SHA-256 (also speculative, in hello), sessions
    and cluster time, logging every request it gets."""

    def __init__(self, cursor_base, cluster_t):
        super().__init__(False)
        self.next_cursor = cursor_base
        self.cluster_t = cluster_t
        self.log = []          # (port, command name, doc, flags)
        self.authed = set()
        self.conv = {}         # port -> (client-first-bare, server-first)
        self.given_cursors = set()
        self.unauthorized = 0
        self.not_found = 0

    def scram_first(self, port, payload):
        bare = payload.split(b",", 2)[2]
        cnonce = dict(kv.split(b"=", 1) for kv in bare.split(b","))[b"r"]
        first = b"r=" + cnonce + b"SNONCE,s=" + base64.b64encode(SALT) + b",i=%d" % ITER
        self.conv[port] = (bare, first)
        return {"conversationId": 1, "done": False, "payload": first}

    def scram_final(self, port, payload):
        bare, first = self.conv.pop(port)
        without, proof = payload.rsplit(b",p=", 1)
        auth_msg = bare + b"," + first + b"," + without
        salted = hashlib.pbkdf2_hmac("sha256", PASSWORD.encode(), SALT, ITER)
        ckey = hm(salted, b"Client Key")
        sig = hm(hashlib.sha256(ckey).digest(), auth_msg)
        if bytes(a ^ b for a, b in zip(ckey, sig)) != base64.b64decode(proof):
            return None
        self.authed.add(port)
        return {"conversationId": 1, "done": True,
                "payload": b"v=" + base64.b64encode(hm(hm(salted, b"Server Key"), auth_msg))}

    def stamp(self, reply):
        reply["$clusterTime"] = {"clusterTime": Timestamp(self.cluster_t, 1),
                                 "signature": {"hash": b"\0" * 20, "keyId": Int64(0)}}
        reply["operationTime"] = Timestamp(self.cluster_t, 1)
        return reply

    def handle(self, request):
        cmd = request.command_name or ""
        doc = request.doc
        port = request.client_port
        with self.lock:
            self.log.append((port, cmd, dict(doc), getattr(request, "flags", 0)))
        if cmd in ("hello", "isMaster", "ismaster"):
            reply = self.hello_doc(request)
            if "saslSupportedMechs" in doc:
                reply["saslSupportedMechs"] = ["SCRAM-SHA-256"]
            spec = doc.get("speculativeAuthenticate")
            if spec is not None and spec.get("mechanism") == "SCRAM-SHA-256":
                reply["speculativeAuthenticate"] = self.scram_first(port, bytes(spec["payload"]))
            return request.replies(reply)
        if cmd == "saslStart":
            return request.ok(**self.scram_first(port, bytes(doc["payload"])))
        if cmd == "saslContinue":
            if port not in self.conv:
                return request.ok(conversationId=1, done=True, payload=b"")
            r = self.scram_final(port, bytes(doc["payload"]))
            if r is None:
                return cmd_error(request, "Authentication failed.", 18, "AuthenticationFailed")
            return request.ok(**r)
        if port not in self.authed:
            self.unauthorized += 1
            return cmd_error(request, "command %s requires authentication" % cmd, 13, "Unauthorized")
        if cmd == "commitTransaction":
            return request.replies(self.stamp({"ok": 1}))
        if cmd == "getMore" and int(doc["getMore"]) not in self.cursors:
            self.not_found += 1
        reply = super().handle(request)
        return reply

    def find(self, request, db, doc):
        r = super().find(request, db, doc)
        return r

    def cursor_ids(self):
        return set(self.cursors)


def run_workload(port):
    client = MongoClient("mongodb://%s:%s@127.0.0.1:%d/?directConnection=true"
                         "&authMechanism=SCRAM-SHA-256" % (USER, PASSWORD, port),
                         serverSelectionTimeoutMS=5000)
    db = client.benchmark_db
    check(len(list(db.many.find({}, batch_size=50))) == 250, "many: wrong count")
    cur = db.many.find({}, batch_size=10)
    next(cur)
    cur.close()
    with client.start_session(causal_consistency=True) as s:
        for txn in (5, 6):
            db.command({"insert": "t", "documents": [{"x": txn}], "txnNumber": Int64(txn),
                        "startTransaction": True, "autocommit": False}, session=s)
            db.command({"find": "t", "txnNumber": Int64(txn), "autocommit": False}, session=s)
            client.admin.command({"commitTransaction": 1, "txnNumber": Int64(txn),
                                  "autocommit": False}, session=s)
        db.test_col.with_options(read_concern=ReadConcern("majority")).find_one(
            {"_id": "test-doc-1"}, session=s)
    db.test_col.with_options(write_concern=WriteConcern(w=0)).insert_one({"w0": 1})
    db.command("ping")
    client.close()


def start_mock(logic):
    server = MockupDB(request_timeout=int(1e6))
    server.autoresponds(logic.handle)
    return server, server.run()


def stamp_replies(logic):
    """Every reply of logic carries its $clusterTime (wraps request.ok)."""
    orig = logic.handle

    def handle(request):
        ok, replies = request.ok, request.replies

        def ok2(*a, **kw):
            kw.setdefault("$clusterTime", logic.stamp({})["$clusterTime"])
            kw.setdefault("operationTime", Timestamp(logic.cluster_t, 1))
            return ok(*a, **kw)
        request.ok = ok2
        return orig(request)
    logic.handle = handle


def lsid_of(doc):
    l = doc.get("lsid")
    if not l:
        return None
    i = l["id"]
    return i.bytes if hasattr(i, "bytes") else bytes(i)


def main():
    with Env() as env:
        m1 = Mongo70Auth(1000, 1000001)
        stamp_replies(m1)
        s1, p1 = start_mock(m1)
        cap = env.start_capture(p1)
        run_workload(cap.port)
        cap.stop()
        check(m1.unauthorized == 0, "pymongo got Unauthorized from M1")
        rec_lsids = {lsid_of(d) for _, _, d, _ in m1.log if lsid_of(d)}
        rec_cursors = {int(d["getMore"]) for _, c, d, _ in m1.log if c == "getMore"}
        check(rec_lsids and len(rec_cursors) >= 1, "the recorded workload has no lsid or getMore")

        m2 = Mongo70Auth(5000, 2000002)
        stamp_replies(m2)
        s2, p2 = start_mock(m2)
        given = set()
        orig_find = m2.find

        def find(request, db, doc):
            r = orig_find(request, db, doc)
            given.update(m2.cursor_ids())
            return r
        m2.find = find
        out = os.path.join(env.tmp, "played.zst")
        p = subprocess.run([MTRACE, "play", cap.out, "--target", "127.0.0.1:%d" % p2,
                            "--username", USER, "--password", PASSWORD, "-o", out],
                           capture_output=True, text=True, timeout=120)
        print(p.stdout)
        check(p.returncode == 0, "play exited %d: %s" % (p.returncode, p.stderr))
        first = p.stdout.splitlines()[0]
        check(re.search(r" 0 unanswered, 0 not sent", first), "summary: " + first)
        m = re.search(r"compared (\d+) request", p.stdout)
        check(m and int(m.group(1)) > 10, "few requests compared")
        for line in p.stdout.splitlines():
            mm = re.search(r"  (\d+) \((\d+)/(\d+)/(\d+)\)$", line)
            if mm:
                check(mm.group(1) == "0", "a reply differs in shape: " + line)

        log = m2.log
        hellos = [(pt, d) for pt, c, d, _ in log if c in ("hello", "isMaster", "ismaster")]
        ports = {pt for pt, _, _, _ in log}
        check(hellos and {pt for pt, _ in hellos} == ports, "a connection without its own hello")
        for _, d in hellos:
            check(d.get("client", {}).get("application", {}).get("name") == "mtrace play",
                  "hello client metadata is not play's: %r" % d.get("client"))
            check("speculativeAuthenticate" not in d, "a recorded speculativeAuthenticate was re-sent")
        check(m2.unauthorized == 0, "play sent %d commands before authenticating" % m2.unauthorized)
        starts = [d for _, c, d, _ in log if c == "saslStart"]
        check(len(starts) == len(ports), "%d saslStart for %d connections" % (len(starts), len(ports)))

        gms = [int(d["getMore"]) for _, c, d, _ in log if c == "getMore"]
        kills = [int(i) for _, c, d, _ in log if c == "killCursors" for i in d["cursors"]]
        check(len(gms) == len([1 for _, c, _, _ in m1.log if c == "getMore"]), "getMore count differs")
        check(kills, "no killCursors reached M2")
        check(not (set(gms + kills) & rec_cursors), "a recorded cursor id reached M2")
        check(all(g >= 5000 for g in gms + kills), "getMore/killCursors ids not M2's: %r" % (gms + kills))
        check(m2.not_found == 0, "%d getMore on unknown cursors" % m2.not_found)

        live_lsids = {lsid_of(d) for _, _, d, _ in log if lsid_of(d)}
        check(live_lsids, "no lsid reached M2")
        check(not (live_lsids & rec_lsids), "a recorded lsid reached M2")
        txn = [(lsid_of(d), int(d["txnNumber"])) for _, _, d, _ in log if "txnNumber" in d]
        check(len(txn) == 6, "want 6 transaction commands, got %r" % txn)
        check(len({l for l, _ in txn}) == 1, "the transaction ran under several lsids")
        check([n for _, n in txn] == [1, 1, 1, 2, 2, 2], "txnNumbers %r" % [n for _, n in txn])

        for _, c, d, _ in log:
            ct = d.get("$clusterTime")
            if ct is not None:
                check(ct["clusterTime"].time == 2000002, "%s carried $clusterTime %r" % (c, ct))
            rc = d.get("readConcern", {})
            if "afterClusterTime" in rc:
                check(rc["afterClusterTime"].time == 2000002, "afterClusterTime %r" % rc)
        check(any("afterClusterTime" in d.get("readConcern", {}) for _, _, d, _ in m1.log),
              "the recorded workload has no afterClusterTime")
        w0 = [f for _, c, d, f in log if c == "insert" and d.get("documents") and
              d["documents"][0].get("w0") == 1]
        check(w0 and w0[0] & 2, "the w:0 insert did not arrive with moreToCome")
        s1.stop()
        s2.stop()
        print("ok: %d connections, %d getMore, %d killCursors remapped; lsid and txnNumber "
              "fresh; cluster time from M2" % (len(ports), len(gms), len(kills)))


if __name__ == "__main__":
    main()
