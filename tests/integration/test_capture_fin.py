"""test_capture_fin.py -- `mtrace capture` when a FIN comes with the data
(the proxy's sockets are edge-triggered: a FIN queued behind data must not
be lost, nor a readable socket forgotten while reading was held back).

1. 20 clients each send a find and shut down their sending side at once
   (data and FIN arrive together): each still gets its reply, then EOF;
   the trace holds every request and reply, each connection closed
   normally.
2. 20 clients each send a request and close() at once, to a plain TCP
   upstream that reads until EOF: the upstream receives every request
   whole, then EOF (the proxy closed the upstream side); the trace
   records every request.
3. One 6 MB request to an upstream that waits 1 s before reading: the
   proxy stops reading at its 4 MB backlog bound with the client socket
   still readable, and must come back to it: the upstream gets all the
   bytes then EOF, the trace records the whole message.
4. The same with an upstream that reads at once: the proxy stops after
   its read budget (PCONN_READ_BUDGET reads) and must come back to the
   socket from its pending list, with no new event to remind it.
5. Replies with a FIN while the client is slow (half-close, server side):
   an upstream sends 18 replies of 512 KiB to one request and closes at
   once; the client (small SO_RCVBUF) starts reading after 1 s.  The proxy
   stops reading the upstream at its 4 MB backlog (after ~3.8 MB in its
   send buffer) with the rest of the data and the FIN in its receive
   queue (no arrival will make a new edge), and must come back on the
   client's EPOLLOUT edge: the client gets every byte then EOF, the trace
   all 18 replies.  The test prints whether that state was reached (`ss`:
   the proxy's upstream socket in CLOSE-WAIT with bytes unread).
   Then the same under --delay-ms 200 (held replies, the backlog bound and
   the FIN at once; the hold timer releases into a blocked client).
Runtime: about 6 s.
"""
import os
import socket
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capture_lib import (Env, RawUpstream, check, msgs, op_msg,  # noqa: E402
                         op_msg_burst, read_to_end, recv_request_id, summary_bytes)

import bson  # noqa: E402

N = 20


def read_all(sock, timeout=10):
    """Bytes until EOF (or a reset); None if no EOF within timeout."""
    data, end = read_to_end(sock, timeout)
    return None if end == "timeout" else data


class Upstream(RawUpstream):
    """A plain TCP server on 127.0.0.1: reads each of n connections until
    EOF (after `delay` seconds) and keeps what it got (None: no EOF)."""

    def __init__(self, n, delay=0.0):
        super().__init__(conns=n, backlog=64, threaded=True)
        self.delay, self.got = delay, []
        self.lock = threading.Lock()
        self.start()

    def serve_conn(self, s):
        time.sleep(self.delay)
        data = read_all(s)
        s.close()
        with self.lock:
            self.got.append(data)

    def wait(self):
        self.join(20)
        return self.got


def closes(recs):
    return {r["conn"]: r for r in recs if r["type"] == "conn_close"}


def fin_with_data(env):
    mock = env.start_mock()
    cap = env.start_capture(mock)
    for i in range(N):
        s = socket.create_connection(("127.0.0.1", cap.port))
        s.sendall(op_msg(100 + i, {"find": "test_col", "filter": {"_id": "test-doc-1"},
                                    "$db": "benchmark_db"}))
        s.shutdown(socket.SHUT_WR)
        data = read_all(s)
        s.close()
        check(data is not None, "conn %d: no EOF from the proxy after the reply" % i)
        check(len(data) >= 16, "conn %d: no reply before EOF (%d bytes)" % (i, len(data)))
        (n,) = struct.unpack("<i", data[:4])
        check(n == len(data), "conn %d: %d bytes, reply says %d" % (i, len(data), n))
        check(struct.unpack("<i", data[8:12])[0] == 100 + i, "conn %d: wrong response_to" % i)
    text = cap.stop()
    recs = env.dump(cap.out)
    req = msgs(recs, "c2s")
    rep = msgs(recs, "s2c")
    check(sorted(m["request_id"] for m in req) == list(range(100, 100 + N)),
          "requests recorded: %r" % [m["request_id"] for m in req])
    check(sorted(m["response_to"] for m in rep) == list(range(100, 100 + N)),
          "replies recorded: %r" % [m["response_to"] for m in rep])
    cl = closes(recs)
    check(len(cl) == N and all(r["reason"] == "normal" for r in cl.values()),
          "close reasons: %r" % [r["reason"] for r in cl.values()])
    rec, fwd, dropped = summary_bytes(text)
    check(rec == fwd and dropped == 0, "recorded %d forwarded %d dropped %d" % (rec, fwd, dropped))
    print("ok: %d requests sent with their FIN: replied, recorded, closed normally" % N)


def close_at_once(env):
    up = Upstream(N)
    cap = env.start_capture(up.port)
    sent = []
    for i in range(N):
        s = socket.create_connection(("127.0.0.1", cap.port))
        m = op_msg(200 + i, {"ping": 1, "$db": "admin"})
        s.sendall(m)
        s.close()
        sent.append(m)
    got = up.wait()
    check(len(got) == N, "upstream saw %d of %d connections end" % (len(got), N))
    check(all(g is not None for g in got), "the proxy did not close the upstream side of %d "
          "connections" % sum(g is None for g in got))
    check(sorted(got) == sorted(sent), "the upstream did not get every request whole")
    cap.stop()
    recs = env.dump(cap.out)
    check(sorted(m["request_id"] for m in msgs(recs, "c2s")) == list(range(200, 200 + N)),
          "requests recorded: %r" % [m["request_id"] for m in msgs(recs, "c2s")])
    check(len(closes(recs)) == N, "%d close records, want %d" % (len(closes(recs)), N))
    print("ok: %d requests with an immediate close: forwarded whole, recorded, upstream "
          "closed" % N)


def big_request(env, delay):
    up = Upstream(1, delay=delay)
    cap = env.start_capture(up.port)
    big = op_msg(300, {"insert": "c", "$db": "x", "pad": bson.Binary(b"\x5a" * (6 << 20))})
    s = socket.create_connection(("127.0.0.1", cap.port))
    sender = threading.Thread(target=lambda: (s.sendall(big), s.shutdown(socket.SHUT_WR)),
                              daemon=True)
    sender.start()
    got = up.wait()
    sender.join(10)
    tail = read_all(s)
    s.close()
    check(len(got) == 1 and got[0] is not None, "the upstream saw no EOF: %r" %
          [None if g is None else len(g) for g in got])
    check(got[0] == big, "upstream got %d bytes of %d" % (len(got[0]), len(big)))
    check(tail == b"", "client: no EOF after the upstream closed")
    text = cap.stop()
    recs = env.dump(cap.out)
    req = msgs(recs, "c2s")
    check(len(req) == 1 and req[0]["len"] == len(big) and "partial" not in req[0]["trace_flags"],
          "recorded: %r" % [(m["len"], m["trace_flags"]) for m in req])
    rec, fwd, dropped = summary_bytes(text)
    check(rec == fwd == len(big) and dropped == 0,
          "recorded %d forwarded %d dropped %d" % (rec, fwd, dropped))
    print("ok: a 6 MB request (upstream reading after %.1f s) arrived whole, then EOF" % delay)


def big_held_back(env):
    big_request(env, 1.0)


def big_fast(env):
    for _ in range(3):  # the budget is reached only when the client is fast
        big_request(env, 0.0)


class BurstUpstream(RawUpstream):
    """A plain TCP server on 127.0.0.1 for one connection: reads one
    request, sends `count` OP_MSG replies of `size` bytes to it, closes."""

    def __init__(self, count, size):
        super().__init__(conn_timeout=15)
        self.replies = b""
        self.count, self.size = count, size
        self.start()

    def serve_conn(self, s):
        rid = recv_request_id(s)
        self.replies = op_msg_burst(self.count, self.size, 1000, rid, b"\x33")
        s.sendall(self.replies)
        s.close()

    def wait(self):
        ended = self.join(20)
        check(ended and self.error is None, "upstream: %s" % (self.error or "still sending"))


def upstream_unread(port):
    """'CLOSE-WAIT <Recv-Q>' of the proxy's socket to the upstream port."""
    try:
        out = subprocess.run(["ss", "-tnH", "dport = :%d" % port], capture_output=True,
                             text=True, timeout=5).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return "unknown (no ss)"
    return " ".join(out[:2]) if out else "closed"


def reply_burst(env, extra):
    up = BurstUpstream(18, 512 << 10)
    cap = env.start_capture(up.port, extra=extra)
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 10)
    s.connect(("127.0.0.1", cap.port))
    s.sendall(op_msg(500, {"find": "c", "$db": "x"}))
    time.sleep(1.0)  # the proxy's backlog fills, the upstream's FIN waits
    state = upstream_unread(up.port)
    got = read_all(s, timeout=15)
    s.close()
    up.wait()
    check(got is not None, "client: no EOF after the upstream's FIN (%s)" % (extra,))
    check(got == up.replies, "client got %d bytes of %d (%s)" %
          (len(got), len(up.replies), extra))
    text = cap.stop()
    recs = env.dump(cap.out)
    rep = msgs(recs, "s2c")
    check([m["request_id"] for m in rep] == list(range(1000, 1018)) and
          all(m["response_to"] == 500 and "partial" not in m["trace_flags"] for m in rep),
          "replies recorded: %r" % [(m["request_id"], m["trace_flags"]) for m in rep])
    rec, fwd, dropped = summary_bytes(text)
    check(rec == fwd == len(up.replies) + len(op_msg(500, {"find": "c", "$db": "x"})) and
          dropped == 0, "recorded %d forwarded %d dropped %d" % (rec, fwd, dropped))
    print("ok: 18 x 512 KiB replies then FIN to a slow client (%s): all delivered, EOF, "
          "recorded (proxy's upstream socket after 1 s: %s)"
          % (" ".join(extra) or "no delay", state))


def slow_client_fin(env):
    reply_burst(env, [])


def slow_client_fin_delay(env):
    reply_burst(env, ["--delay-ms", "200"])


def main():
    for step in (fin_with_data, close_at_once, big_held_back, big_fast, slow_client_fin,
                 slow_client_fin_delay):
        with Env() as env:
            step(env)


if __name__ == "__main__":
    main()
