#!/usr/bin/python3
"""test_play_legacy_query.py -- `mtrace play` of legacy OP_QUERY finds
recorded from a real driver.

MockupDB advertises maxWireVersion 3 (MongoDB 3.0), so pymongo 3.11 reads
with legacy opcodes: find_one and find as OP_QUERY on the collection's
namespace (not the find command, which needs wire version 4), the later
batches of a cursor as OP_GET_MORE, closing a cursor early as
OP_KILL_CURSORS; commands (count, insert) go as OP_QUERY on d.$cmd.  Two
workloads are recorded through `mtrace capture`:
  1. S.zst: find_one, a find answered in one batch, count, insert; played
     at --max-speed and at 1x against `mtrace replay S.zst`;
  2. F.zst: a find over four batches (OP_GET_MORE), a find closed after
     two (OP_KILL_CURSORS), find_one; played against a second MockupDB
     whose cursor has another id (`mtrace replay` does not serve a
     recorded OP_GET_MORE: it holds no command document).  play's own
     handshake is an OP_MSG hello, which a real MongoDB before 3.6 does
     not understand; this MockupDB answers it as 3.0 answers isMaster.
Checks, each play: exit 0, 0 unanswered, 0 not sent, 0 getMore without a
live cursor, no reply differing in shape, per command the played count
and replies equal the recorded ones; play's -o trace holds the same
opcodes, commands and namespaces in the same order as the recording
(handshakes aside).  1: replay's summary has 0 misses.  2: every
OP_GET_MORE and OP_KILL_CURSORS the second server got carries its own
cursor id, never the recorded one.
"""
import json
import os
import re
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capture_lib import MTRACE, Env, check  # noqa: E402

from mockupdb import Command, MockupDB, OpGetMore, OpKillCursors, OpMsg, OpQuery, OpReply  # noqa: E402
from pymongo import MongoClient  # noqa: E402

DOCS = [{"_id": i, "v": i * 10} for i in range(7)]


class LegacyServer:
    """MockupDB as MongoDB 3.0 over a 7-document collection d.c: numToReturn
    1 or -1 one document; 2 batches of 2 under cursor `cursor`, OP_GET_MORE
    walking on, the last batch closing it; otherwise every document at
    once.  $cmd answers count and insert.  Logs the cursor ids of every
    OP_GET_MORE and OP_KILL_CURSORS."""

    def __init__(self, cursor):
        self.cursor, self.pos, self.ids = cursor, {}, []
        self.mock = MockupDB(auto_ismaster={"ismaster": True, "maxWireVersion": 3,
                                            "minWireVersion": 0})
        self.mock.autoresponds(self.handle)
        self.mock.run()
        self.port = self.mock.port

    def handle(self, r):
        if isinstance(r, OpMsg) and r.command_name in ("hello", "ismaster", "isMaster"):
            # play's own handshake is an OP_MSG hello (a real MongoDB 3.0
            # would close the connection): answered as 3.0 would answer
            # an OP_QUERY isMaster
            return r.replies({"ismaster": True, "maxWireVersion": 3, "minWireVersion": 0})
        if isinstance(r, Command):
            name = next(iter(r.doc)).lower()
            if name in ("ismaster", "hello"):
                return False  # auto_ismaster
            if name == "insert":
                return r.replies({"ok": 1, "n": len(r.doc.get("documents", []))})
            if name == "count":
                return r.replies({"ok": 1, "n": len(DOCS)})
            return r.replies({"ok": 1})
        if isinstance(r, OpQuery) and r.namespace == "d.c":
            if r.num_to_return in (1, -1):
                return r.reply(OpReply(DOCS[:1], cursor_id=0))
            if r.num_to_return == 2:
                self.pos[self.cursor] = 2
                return r.reply(OpReply(DOCS[:2], cursor_id=self.cursor))
            return r.reply(OpReply(DOCS, cursor_id=0))
        if isinstance(r, OpGetMore):
            self.ids.append(("getMore", r.cursor_id))
            i = self.pos.get(r.cursor_id, len(DOCS))
            self.pos[r.cursor_id] = i + 2
            last = i + 2 >= len(DOCS)
            return r.reply(OpReply(DOCS[i:i + 2], cursor_id=0 if last else r.cursor_id))
        if isinstance(r, OpKillCursors):
            self.ids.extend(("killCursors", c) for c in r.cursor_ids)
            return True  # OP_KILL_CURSORS has no reply
        return False


def single(coll):
    got = [coll.find_one({"_id": 0}), list(coll.find({})), coll.estimated_document_count()]
    coll.insert_one({"_id": 99})
    check(got == [DOCS[0], DOCS, 7], "MockupDB answered %r" % got)


def cursors(coll):
    walked = list(coll.find({}).batch_size(2))
    cur = coll.find({}).batch_size(2)
    early = [next(cur), next(cur), next(cur)]  # two batches, then closed
    cur.close()
    one = coll.find_one({"_id": 0})
    check(walked == DOCS and early == DOCS[:3] and one == DOCS[0],
          "MockupDB answered %r %r %r" % (walked, early, one))


def record(env, server, workload, name):
    cap = env.start_capture(server.port, out=env.path(name))
    c = MongoClient("127.0.0.1", cap.port, serverSelectionTimeoutMS=5000)
    workload(c.d.c)
    c.close()
    cap.stop()
    return cap.out


def legacy_seq(recs):
    """Per connection: (opcode, command, db, collection) of each request
    (dump names a legacy query on a collection "find"), hello aside."""
    seq = {}
    for r in recs:
        if r.get("type") != "msg" or r.get("dir") != "c2s":
            continue
        cmd = (r.get("cmd") or "").lower()
        if cmd in ("ismaster", "hello"):
            continue
        seq.setdefault(r["conn"], []).append((r.get("op"), cmd, r.get("db"), r.get("coll")))
    return [s for s in seq.values() if s]


def requests(recs, op, cmd=None):
    return [r for r in recs if r.get("type") == "msg" and r.get("dir") == "c2s" and
            r.get("op") == op and (cmd is None or r.get("cmd") == cmd)]


def play(env, trace, port, what, extra=()):
    """Plays trace against 127.0.0.1:port; checks the summary and the -o
    trace against the recording; returns the summary."""
    out = env.path("played.%s.zst" % re.sub(r"\W", "_", what))
    p = subprocess.run([MTRACE, "play", trace, "--target", "127.0.0.1:%d" % port,
                        "--json", "-o", out, "--timeout-ms", "5000"] + list(extra),
                       capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, "%s exited %d: %s" % (what, p.returncode, p.stderr))
    s = json.loads(p.stdout)
    check(s["sent"] > 0 and s["unanswered"] == 0 and s["not_sent"] == 0 and
          s["no_live_cursor"] == 0, "%s: %r" % (what, s))
    for name, c in s["report"]["commands"].items():
        check(c["a"]["requests"] == c["b"]["requests"] and
              c["a"]["replies"] == c["b"]["replies"] and c["shape_diffs"] == 0,
              "%s: %s recorded %r, played %r, %d shape diffs"
              % (what, name, c["a"], c["b"], c["shape_diffs"]))
    want, got = legacy_seq(env.dump(trace)), legacy_seq(env.dump(out))
    check(got == want, "%s: the played requests differ from the recorded ones:\n%r\n%r"
          % (what, got, want))
    print("ok: %s: %d requests sent (%s), in the recorded order"
          % (what, s["sent"], ", ".join("%s %d" % (n, c["b"]["requests"])
                                        for n, c in s["report"]["commands"].items())))
    return s


def main():
    with Env() as env:
        m1 = LegacyServer(4242)
        try:
            strace = record(env, m1, single, "S.zst")
            ftrace = record(env, m1, cursors, "F.zst")
        finally:
            m1.mock.stop()
        srecs, frecs = env.dump(strace), env.dump(ftrace)
        check(len(requests(srecs, "OP_QUERY", "find")) == 2 and
              len(requests(frecs, "OP_QUERY", "find")) == 3,
              "legacy finds in the traces: %d, %d" % (len(requests(srecs, "OP_QUERY", "find")),
                                                      len(requests(frecs, "OP_QUERY", "find"))))
        check(len(requests(frecs, "OP_GET_MORE")) == 4 and
              len(requests(frecs, "OP_KILL_CURSORS")) == 1,
              "F.zst: %d OP_GET_MORE, %d OP_KILL_CURSORS"
              % (len(requests(frecs, "OP_GET_MORE")), len(requests(frecs, "OP_KILL_CURSORS"))))
        check(not [r for r in srecs + frecs if r.get("type") == "msg" and r.get("op") == "OP_MSG"],
              "the driver sent OP_MSG to a wire version 3 server")

        # 1. against mtrace replay of the same trace
        for speed in (["--max-speed"], []):
            rp, rport, rlog = env.start_replay(strace)
            play(env, strace, rport, "S.zst %s vs replay" % (speed or ["1x"])[0], speed)
            rp.send_signal(signal.SIGINT)
            rp.wait(10)
            with open(rlog) as f:
                log = f.read()
            check(re.search(r"missed 0,", log), "replay saw misses: %s" % log[-1500:])
        print("ok: replay missed 0")

        # 2. cursors against a second legacy server
        m2 = LegacyServer(777)
        try:
            play(env, ftrace, m2.port, "F.zst vs MockupDB", ["--max-speed"])
        finally:
            m2.mock.stop()
        check(m2.ids == [("getMore", 777)] * 4 + [("killCursors", 777)],
              "the second server got cursor ids %r (its own is 777, the recorded 4242)" % m2.ids)
        print("ok: OP_GET_MORE and OP_KILL_CURSORS carried the live cursor id 777")


if __name__ == "__main__":
    main()
