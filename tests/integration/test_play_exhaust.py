#!/usr/bin/python3
"""test_play_exhaust.py -- `mtrace play` of an exhaust cursor (OP_MSG
getMore with exhaustAllowed, answered by a stream of moreToCome replies).

No peer here streams a getMore: MockupDB 1.8 refuses the exhaustAllowed
bit, pymongo 3.11 runs exhaust cursors over legacy OP_QUERY, and `mtrace
replay` answers a getMore with one reply (it clears moreToCome, which the
OP_MSG spec lets a server do; it streams only hello).  So the server is a
small
wire-protocol server written here from the OP_MSG spec: it answers hello,
find (cursor C, one document), ping, and a getMore with exhaustAllowed
with three replies, the first two with moreToCome and C, the last with
cursor id 0, each responseTo the requestID of the reply before it (the
first: the getMore's).  A raw client records hello, find, the exhaust
getMore and a ping through `mtrace capture` to one such server (C = 7);
the trace is played into another (C = 9).  Checks:
  - the trace holds the getMore with exhaustAllowed and its three replies;
  - play exits 0, 0 unanswered, 0 not sent, no reply differing in shape;
  - the second server got one getMore, with exhaustAllowed and its own
    cursor id 9 (remapped), never 7;
  - play's -o trace: the three streamed replies, and the ping sent after
    the last of them (the connection waits for the stream's end);
  - `mtrace replay` of the trace serves the streamed batches one per
    getMore (the client goes on as when a server declines exhaust), in
    order, the last closing the cursor, 0 misses.
"""
import os
import re
import socket
import struct
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capture_lib import MTRACE, Env, check  # noqa: E402

import bson  # noqa: E402
from bson.int64 import Int64  # noqa: E402

MORE_TO_COME = 1 << 1
EXHAUST_ALLOWED = 1 << 16


def msg(rid, to, flags, doc):
    body = bson.encode(doc)
    return struct.pack("<iiiiIB", 21 + len(body), rid, to, 2013, flags, 0) + body


def read_msg(sock):
    """(requestID, responseTo, flags, body) of the next OP_MSG, or None."""
    head = b""
    while len(head) < 16:
        b = sock.recv(16 - len(head))
        if not b:
            return None
        head += b
    length, rid, to, op = struct.unpack("<iiii", head)
    rest = b""
    while len(rest) < length - 16:
        b = sock.recv(length - 16 - len(rest))
        if not b:
            return None
        rest += b
    check(op == 2013, "opcode %d" % op)
    flags = struct.unpack("<I", rest[:4])[0]
    check(rest[4] == 0, "first section is not a body")
    n = struct.unpack("<i", rest[5:9])[0]
    return rid, to, flags, bson.decode(rest[5:5 + n])


class StreamServer(threading.Thread):
    """Serves hello, find, ping, and exhaust getMore streams on 127.0.0.1."""

    def __init__(self, cursor_id):
        super().__init__(daemon=True)
        self.cid = cursor_id
        self.log = []  # (command, flags, document)
        self.lock = threading.Lock()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.next_rid = 1000

    def run(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(c,), daemon=True).start()

    def send(self, c, to, flags, doc):
        with self.lock:
            rid = self.next_rid
            self.next_rid += 1
        c.sendall(msg(rid, to, flags, doc))
        return rid

    def serve(self, c):
        with c:
            while True:
                m = read_msg(c)
                if m is None:
                    return
                rid, _, flags, doc = m
                cmd = next(iter(doc))
                with self.lock:
                    self.log.append((cmd, flags, doc))
                if cmd in ("hello", "isMaster", "ismaster"):
                    self.send(c, rid, 0, {"isWritablePrimary": True, "ismaster": True,
                                          "maxWireVersion": 21, "minWireVersion": 0,
                                          "maxBsonObjectSize": 16777216,
                                          "maxMessageSizeBytes": 48000000,
                                          "connectionId": 1, "ok": 1.0})
                elif cmd == "find":
                    self.send(c, rid, 0, {"cursor": {"id": Int64(self.cid), "ns": "d.c",
                                                     "firstBatch": [{"_id": 0}]}, "ok": 1.0})
                elif cmd == "getMore" and flags & EXHAUST_ALLOWED:
                    to = rid
                    for i in (1, 2, 3):
                        last = i == 3
                        to = self.send(c, to, 0 if last else MORE_TO_COME,
                                       {"cursor": {"id": Int64(0 if last else self.cid),
                                                   "ns": "d.c", "nextBatch": [{"_id": i}]},
                                        "ok": 1.0})
                elif cmd == "getMore":
                    self.send(c, rid, 0, {"cursor": {"id": Int64(0), "ns": "d.c",
                                                     "nextBatch": [{"_id": 1}, {"_id": 2},
                                                                   {"_id": 3}]}, "ok": 1.0})
                else:
                    self.send(c, rid, 0, {"ok": 1.0})


def client(port):
    """hello, find, an exhaust getMore read to its end, ping."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(msg(1, 0, 0, {"hello": 1, "$db": "admin"}))
    check(read_msg(s) is not None, "no hello reply")
    s.sendall(msg(2, 0, 0, {"find": "c", "filter": {}, "batchSize": 1, "$db": "d"}))
    cid = read_msg(s)[3]["cursor"]["id"]
    s.sendall(msg(3, 0, EXHAUST_ALLOWED,
                  {"getMore": Int64(cid), "collection": "c", "batchSize": 1, "$db": "d"}))
    n = 0
    while True:
        _, _, flags, doc = read_msg(s)
        n += 1
        if not flags & MORE_TO_COME:
            break
    check(n == 3 and doc["cursor"]["id"] == 0, "stream of %d replies" % n)
    s.sendall(msg(4, 0, 0, {"ping": 1, "$db": "admin"}))
    check(read_msg(s)[3].get("ok") == 1.0, "no ping reply")
    s.close()


def stream_of(recs):
    """The getMore of a dumped trace, its replies, and the ping's record."""
    gm = [r for r in recs if r.get("type") == "msg" and r.get("dir") == "c2s" and
          r.get("cmd") == "getMore"]
    check(len(gm) == 1, "%d getMore in the trace" % len(gm))
    replies = [r for r in recs if r.get("type") == "msg" and r.get("dir") == "s2c" and
               r.get("conn") == gm[0]["conn"] and r.get("body", {}).get("cursor", {})
               .get("nextBatch") is not None]
    ping = [r for r in recs if r.get("type") == "msg" and r.get("dir") == "c2s" and
            r.get("cmd") == "ping"]
    check(len(ping) == 1, "%d ping in the trace" % len(ping))
    return gm[0], replies, ping[0]


def main():
    with Env() as env:
        s1 = StreamServer(7)
        s1.start()
        cap = env.start_capture(s1.port)
        client(cap.port)
        cap.stop()
        gm, replies, _ = stream_of(env.dump(cap.out))
        check(len(replies) == 3, "the trace holds %d streamed replies" % len(replies))

        s2 = StreamServer(9)
        s2.start()
        out = env.path("played.zst")
        p = subprocess.run([MTRACE, "play", cap.out, "--target", "127.0.0.1:%d" % s2.port,
                            "--timeout-ms", "5000", "-o", out],
                           capture_output=True, text=True, timeout=60)
        print(p.stdout)
        check(p.returncode == 0, "play exited %d: %s" % (p.returncode, p.stderr))
        first = p.stdout.splitlines()[0]
        check(re.search(r" 0 unanswered, 0 not sent", first), "summary: " + first)
        for line in p.stdout.splitlines():
            mm = re.search(r"  (\d+) \((\d+)/(\d+)/(\d+)\)$", line)
            if mm:
                check(mm.group(1) == "0", "a reply differs in shape: " + line)
        gms = [(f, d) for c, f, d in s2.log if c == "getMore"]
        check(len(gms) == 1, "the server got %d getMore" % len(gms))
        check(gms[0][0] & EXHAUST_ALLOWED, "the getMore lost exhaustAllowed")
        check(int(gms[0][1]["getMore"]) == 9, "getMore carried cursor %r, not the live 9"
              % gms[0][1]["getMore"])
        check([c for c, _, _ in s2.log if c not in ("hello", "isMaster")] ==
              ["find", "getMore", "ping"], "the server got %r" % [c for c, _, _ in s2.log])
        _, played, ping = stream_of(env.dump(out))
        check(len(played) == 3, "play recorded %d streamed replies" % len(played))
        check(ping["t_ns"] >= max(r["t_ns"] for r in played),
              "the ping was sent before the stream ended")
        print("ok: exhaust getMore played: sent with exhaustAllowed and the live cursor id, "
              "3 streamed replies taken, the next request sent after the last; %s" % first)

        # replay of the same trace: it answers an exhaust getMore with one
        # reply (no moreToCome); the client goes on with getMore and gets
        # the streamed batches in order, the last closing the cursor
        rep, port, log = env.start_replay(cap.out)
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(msg(1, 0, 0, {"hello": 1, "$db": "admin"}))
        read_msg(s)
        s.sendall(msg(2, 0, 0, {"find": "c", "filter": {}, "batchSize": 1, "$db": "d"}))
        cid = read_msg(s)[3]["cursor"]["id"]
        got = []
        for i in range(3):
            s.sendall(msg(3 + i, 0, EXHAUST_ALLOWED, {"getMore": Int64(cid), "collection": "c",
                                                     "batchSize": 1, "$db": "d"}))
            _, _, flags, doc = read_msg(s)
            check(not flags & MORE_TO_COME, "replay streamed a getMore")
            check(doc.get("ok") == 1.0, "getMore %d: %r" % (i, doc))
            got += [d["_id"] for d in doc["cursor"]["nextBatch"]]
            cid = doc["cursor"]["id"]
        s.close()
        check(got == [1, 2, 3] and cid == 0, "replay served %r, cursor %r" % (got, cid))
        rep.terminate()
        rep.wait(10)
        with open(log) as f:
            text = f.read()
        check("missed 0," in text, "replay missed: %s" % text[-800:])
        print("ok: replay of the exhaust trace: the 3 streamed batches served to 3 getMore, "
              "0 misses")


if __name__ == "__main__":
    main()
