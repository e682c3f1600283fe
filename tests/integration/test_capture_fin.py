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
Runtime: about 3 s.
"""
import os
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capture_lib import Env, check, msgs, summary_bytes  # noqa: E402

import bson  # noqa: E402

N = 20


def op_msg(request_id, doc):
    body = bson.encode(doc)
    return struct.pack("<iiiiIB", 16 + 5 + len(body), request_id, 0, 2013, 0, 0) + body


def read_all(sock, timeout=10):
    """Bytes until EOF (or a reset); None if no EOF within timeout."""
    sock.settimeout(timeout)
    data = b""
    try:
        while True:
            chunk = sock.recv(1 << 20)
            if not chunk:
                return data
            data += chunk
    except ConnectionResetError:
        return data
    except socket.timeout:
        return None


class Upstream:
    """A plain TCP server on 127.0.0.1: reads each connection until EOF
    (after `delay` seconds) and keeps what it got (None: no EOF)."""

    def __init__(self, n, delay=0.0):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.n, self.delay, self.got = n, delay, []
        self.lock = threading.Lock()
        self.threads = []
        self.acceptor = threading.Thread(target=self.accept_loop, daemon=True)
        self.acceptor.start()

    def accept_loop(self):
        self.sock.settimeout(15)
        for _ in range(self.n):
            try:
                s, _ = self.sock.accept()
            except socket.timeout:
                return
            t = threading.Thread(target=self.serve, args=(s,), daemon=True)
            t.start()
            self.threads.append(t)

    def serve(self, s):
        time.sleep(self.delay)
        data = read_all(s)
        s.close()
        with self.lock:
            self.got.append(data)

    def wait(self):
        self.acceptor.join(20)
        for t in self.threads:
            t.join(20)
        self.sock.close()
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


def main():
    for step in (fin_with_data, close_at_once, big_held_back, big_fast):
        with Env() as env:
            step(env)


if __name__ == "__main__":
    main()
