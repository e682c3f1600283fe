"""test_capture_replset.py -- `mtrace capture` in front of a replica set
member.  A driver that discovers the set reads hosts/setName from the
handshake reply it gets through the proxy and then connects to those
members directly: the workload succeeds and the trace holds only the
handshake.  The proxy cannot stop that (rewriting replies would change
what it records), but it says so once.

1. A raw upstream answers every hello with setName "rs0" and hosts: two
   raw clients handshake through the proxy; each gets the reply unchanged,
   the proxy's stderr holds the warning exactly once, naming the set.
2. The same upstream answering as a standalone (no setName, no hosts):
   no warning.
Runtime: about 1 s.
"""
import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capture_lib import (Env, RawUpstream, check, msgs, op_msg, recv_msg,  # noqa: E402
                         recv_request_id)

import bson  # noqa: E402

WARNING = "answered conn"


class HelloUpstream(RawUpstream):
    """Answers each hello (one per connection, n of them) with reply_doc."""

    def __init__(self, reply_doc, n):
        super().__init__(conns=n, backlog=8, accept_timeout=10, conn_timeout=10)
        self.doc = reply_doc
        self.start()

    def serve_conn(self, s):
        try:
            rid = recv_request_id(s)
            s.sendall(op_msg(9000 + rid, self.doc, rid))
            recv_msg(s, timeout=5)  # until the client closes
        finally:
            s.close()

    def wait(self):
        self.join(15)


def handshake(port, rid):
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(10)
    s.sendall(op_msg(rid, {"hello": 1, "$db": "admin"}))
    reply = recv_msg(s)
    s.close()
    check(reply is not None, "no hello reply through the proxy")
    return bson.decode(reply[21:])


def run(env, doc, want_warnings, what):
    up = HelloUpstream(doc, 2)
    cap = env.start_capture(up.port)
    for rid in (11, 12):
        got = handshake(cap.port, rid)
        check(got == doc, "%s: the reply changed through the proxy: %r" % (what, got))
    up.wait()
    text = cap.stop()
    n = text.count(WARNING)
    check(n == want_warnings, "%s: %d replica-set warnings, want %d:\n%s" %
          (what, n, want_warnings, text))
    if want_warnings:
        check('setName "rs0"' in text and "directConnection=true" in text,
              "%s: the warning does not name the set or the fix:\n%s" % (what, text))
    recs = env.dump(cap.out)
    check(len(msgs(recs, "s2c")) == 2, "%s: replies recorded: %d" % (what, len(msgs(recs, "s2c"))))
    print("ok: %s: %d warning(s), replies forwarded unchanged and recorded" % (what, n))


def main():
    member = {"ok": 1.0, "isWritablePrimary": True, "setName": "rs0",
              "hosts": ["127.0.0.1:1", "127.0.0.1:2"], "maxWireVersion": 21}
    standalone = {"ok": 1.0, "isWritablePrimary": True, "maxWireVersion": 21}
    with Env() as env:
        run(env, member, 1, "replica set member")
    with Env() as env:
        run(env, standalone, 0, "standalone")


if __name__ == "__main__":
    main()
