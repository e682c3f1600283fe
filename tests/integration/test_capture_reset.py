"""test_capture_reset.py -- `mtrace capture` when the upstream resets the
connection (RST) while the client still reads the replies slowly.

With a direct connection Linux lets the client read every byte the server
sent before its reset (tcp_recvmsg returns queued data before the error),
then the client gets ECONNRESET.  Through the proxy the same must hold:
the replies the proxy read from the upstream are delivered, then the
client side is reset (not closed with a FIN), and the trace records every
reply and a server-reset close.

An upstream (a plain TCP server) reads one request, sends 14 OP_MSG
replies of 512 KiB, waits until its send queue is empty (every byte is
with the proxy: SIOCOUTQ 0), then resets (SO_LINGER 0, close).  The
client (small SO_RCVBUF) sleeps 1 s, then reads in 64 KiB steps with
short pauses.  The proxy holds up to its 4 MB backlog plus its send
buffer to the client (~3.8 MB); what it has not read yet waits in its
receive queue before the reset.

1. no delay;
2. --delay-ms 200 (held replies when the reset is read);
3. the client sends a second request after the reset: the replies still
   arrive, then the reset.  If the proxy had not read the reset yet, its
   send of that request to the upstream fails first (the reset is then
   read behind the data); the request is recorded (it was read) and
   counted as unsent.  Otherwise it is not read at all.  The test says
   which happened.
4. the client half-closes after its request (the proxy forwards its FIN,
   so both directions have ended when the reset is read): the same.
5. the other way round: a client sends a 6 MB request, resets once the
   proxy has taken every byte; the upstream reads slowly after 1 s and
   must get the whole request, then a reset; close client-reset.
Runtime: about 11 s.
"""
import os
import re
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capture_lib import (Env, RawUpstream, check, msgs, op_msg,  # noqa: E402
                         op_msg_burst, read_to_end, recv_request_id, reset_close,
                         summary_bytes, wait_sent)

import bson  # noqa: E402

COUNT, SIZE = 14, 512 << 10  # 7.3 MB: always taken whole by the proxy (18: not always)


class ResetUpstream(RawUpstream):
    """One connection: reads a request, sends COUNT replies of SIZE bytes,
    waits for its send queue to empty, resets."""

    def __init__(self):
        super().__init__(conn_timeout=15)
        self.replies = b""
        self.drained = False
        self.reset = threading.Event()
        self.start()

    def serve_conn(self, s):
        try:
            rid = recv_request_id(s)
            self.replies = op_msg_burst(COUNT, SIZE, 2000, rid, b"\x44")
            s.sendall(self.replies)
            self.drained = wait_sent(s)
            reset_close(s)
        finally:
            self.reset.set()

    def wait(self):
        ended = self.join(20)
        check(ended and self.error is None, "upstream: %s" % (self.error or "still sending"))
        check(self.drained, "upstream: its send queue never emptied (the proxy did "
              "not take every byte), the test cannot say what the client should get")


def read_slowly(sock, timeout=20):
    """(bytes, how it ended: 'reset', 'eof' or 'timeout')."""
    return read_to_end(sock, timeout, step=64 << 10, pause=0.002)


def unsent(text):
    m = re.search(r"\(unsent (\d+),", text)
    check(m is not None, "no unsent count in:\n" + text)
    return int(m.group(1))


def run(env, extra, second_request, half_close=False):
    up = ResetUpstream()
    cap = env.start_capture(up.port, extra=extra)
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 10)
    s.connect(("127.0.0.1", cap.port))
    req = op_msg(600, {"find": "c", "$db": "x"})
    s.sendall(req)
    if half_close:
        s.shutdown(socket.SHUT_WR)  # the proxy forwards the FIN: both sides end
    check(up.reset.wait(15), "the upstream never reset")
    late = op_msg(601, {"find": "c", "$db": "x"})
    if second_request:
        s.sendall(late)
    time.sleep(1.0)  # the proxy holds replies (backlog), the reset waits
    got, end = read_slowly(s)
    s.close()
    up.wait()
    what = " ".join(extra) or "no delay"
    if second_request:
        what += ", a request after the reset"
    if half_close:
        what += ", client half-closed"
    check(got == up.replies, "client got %d bytes of %d, then %s (%s)" %
          (len(got), len(up.replies), end, what))
    check(end == "reset", "client: %s after the replies, want a reset (%s)" % (end, what))
    text = cap.stop()
    recs = env.dump(cap.out)
    rep = msgs(recs, "s2c")
    check([m["request_id"] for m in rep] == list(range(2000, 2000 + COUNT)) and
          all(m["response_to"] == 600 and "partial" not in m["trace_flags"] for m in rep),
          "replies recorded (%s): %r" % (what, [(m["request_id"], m["trace_flags"])
                                                for m in rep]))
    reqs = [m["request_id"] for m in msgs(recs, "c2s")]
    # the late request is read (recorded, then unsent) only if the proxy
    # had not read the reset yet when it came (its send to the upstream
    # fails first); once the reset is read, the client side is not read
    late_read = second_request and reqs == [600, 601]
    check(reqs == [600] or late_read, "requests recorded (%s): %r" % (what, reqs))
    cl = [r for r in recs if r["type"] == "conn_close"]
    check(len(cl) == 1 and cl[0]["reason"] == "server-reset",
          "close records (%s): %r" % (what, [r.get("reason") for r in cl]))
    rec, fwd, dropped = summary_bytes(text)
    lost = unsent(text)
    want_lost = len(late) if late_read else 0
    check(dropped == 0 and lost == want_lost and rec == fwd + lost,
          "recorded %d forwarded %d unsent %d (want %d) dropped %d (%s)" %
          (rec, fwd, lost, want_lost, dropped, what))
    print("ok: %d x %d KiB replies then an upstream reset, slow client (%s): every byte "
          "delivered, then a reset; recorded, close server-reset%s" %
          (COUNT, SIZE >> 10, what, "" if not second_request else
           "; the late request was %s" % ("read before the reset (recorded, unsent)"
                                          if late_read else "not read (reset seen first)")))


class SlowUpstream(RawUpstream):
    """One connection: waits 1 s, then reads slowly until EOF or a reset;
    keeps the bytes and how it ended."""

    def __init__(self):
        super().__init__()
        self.got, self.end = b"", "no connection"
        self.start()

    def serve_conn(self, s):
        time.sleep(1.0)
        self.got, self.end = read_slowly(s)
        s.close()

    def wait(self):
        check(self.join(30), "upstream: still reading")


def client_reset(env):
    """The other way: a client sends a 6 MB request and resets once its
    send queue is empty; the upstream, reading slowly after 1 s, gets
    every byte, then a reset."""
    up = SlowUpstream()
    cap = env.start_capture(up.port)
    big = op_msg(700, {"insert": "c", "$db": "x", "pad": bson.Binary(b"\x66" * (6 << 20))})
    s = socket.create_connection(("127.0.0.1", cap.port))
    s.sendall(big)
    check(wait_sent(s), "client: its send queue never emptied (the proxy did not take every "
          "byte)")
    reset_close(s)
    up.wait()
    check(up.got == big, "upstream got %d bytes of %d, then %s" % (len(up.got), len(big), up.end))
    check(up.end == "reset", "upstream: %s after the request, want a reset" % up.end)
    text = cap.stop()
    recs = env.dump(cap.out)
    req = msgs(recs, "c2s")
    check(len(req) == 1 and req[0]["len"] == len(big) and "partial" not in req[0]["trace_flags"],
          "recorded: %r" % [(m["len"], m["trace_flags"]) for m in req])
    cl = [r for r in recs if r["type"] == "conn_close"]
    check(len(cl) == 1 and cl[0]["reason"] == "client-reset",
          "close records: %r" % [r.get("reason") for r in cl])
    rec, fwd, dropped = summary_bytes(text)
    check(rec == fwd == len(big) and dropped == 0 and unsent(text) == 0,
          "recorded %d forwarded %d unsent %d dropped %d" % (rec, fwd, unsent(text), dropped))
    print("ok: a 6 MB request then a client reset, slow upstream: every byte delivered, "
          "then a reset; recorded, close client-reset")


def main():
    for extra, second, half in (([], False, False), (["--delay-ms", "200"], False, False),
                                ([], True, False), ([], False, True)):
        with Env() as env:
            run(env, extra, second, half)
    with Env() as env:
        client_reset(env)


if __name__ == "__main__":
    main()
