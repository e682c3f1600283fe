"""test_capture_urg.py -- `mtrace capture` with TCP urgent data (MSG_OOB)
on an edge-triggered socket.

Linux recv() stops short at a TCP urgent mark with bytes still queued
behind it, so "a short read drained the socket" does not hold there: the
proxy must read on (EPOLLPRI says an urgent mark is pending) or the rest
of the message waits for an edge that never comes.  The MongoDB protocol
has no urgent data: the proxy keeps the urgent byte in the stream
(SO_OOBINLINE), so the bytes the client sent reach the server unchanged.

1. 5 clients each send a whole find in one send(MSG_OOB) (one segment;
   the urgent mark is the message's last byte, so the proxy's first read
   stops one byte short): each gets its reply from MockupDB, and the
   trace holds every request and reply.
2. One client sends a find in two parts, the first with MSG_OOB (the mark
   in the middle of the message), then a second find: both replies come.
Runtime: about 2 s.
"""
import os
import socket
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capture_lib import Env, check, msgs, op_msg, recv_msg, summary_bytes  # noqa: E402


N = 5


def find(request_id):
    return op_msg(request_id, {"find": "test_col", "filter": {"_id": "test-doc-1"},
                               "$db": "benchmark_db"})


def urgent_last_byte(env):
    mock = env.start_mock()
    cap = env.start_capture(mock)
    socks = []
    for i in range(N):
        s = socket.create_connection(("127.0.0.1", cap.port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.send(find(100 + i), socket.MSG_OOB)
        socks.append(s)
    for i, s in enumerate(socks):
        rep = recv_msg(s, timeout=5)
        check(rep is not None, "conn %d: no reply to a find sent with MSG_OOB "
              "(the proxy stopped at the urgent mark)" % i)
        check(struct.unpack("<i", rep[8:12])[0] == 100 + i, "conn %d: wrong response_to" % i)
        s.close()
    text = cap.stop()
    recs = env.dump(cap.out)
    req, rep = msgs(recs, "c2s"), msgs(recs, "s2c")
    check(sorted(m["request_id"] for m in req) == list(range(100, 100 + N)),
          "requests recorded: %r" % [m["request_id"] for m in req])
    check(sorted(m["response_to"] for m in rep) == list(range(100, 100 + N)),
          "replies recorded: %r" % [m["response_to"] for m in rep])
    rec, fwd, dropped = summary_bytes(text)
    check(rec == fwd and dropped == 0, "recorded %d forwarded %d dropped %d" % (rec, fwd, dropped))
    print("ok: %d finds sent with MSG_OOB: forwarded whole, replied, recorded" % N)


def urgent_mid_message(env):
    mock = env.start_mock()
    cap = env.start_capture(mock)
    s = socket.create_connection(("127.0.0.1", cap.port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    m = find(200)
    s.send(m[:40], socket.MSG_OOB)
    s.sendall(m[40:])
    rep = recv_msg(s, timeout=5)
    check(rep is not None, "no reply to a find with an urgent byte inside")
    check(struct.unpack("<i", rep[8:12])[0] == 200, "wrong response_to")
    s.sendall(find(201))
    rep = recv_msg(s, timeout=5)
    check(rep is not None and struct.unpack("<i", rep[8:12])[0] == 201,
          "no reply to the next find")
    s.close()
    cap.stop()
    recs = env.dump(cap.out)
    check(sorted(m["request_id"] for m in msgs(recs, "c2s")) == [200, 201],
          "requests recorded: %r" % [m["request_id"] for m in msgs(recs, "c2s")])
    print("ok: an urgent byte inside a find: forwarded in the stream, both replies came")


def main():
    for step in (urgent_last_byte, urgent_mid_message):
        with Env() as env:
            step(env)


if __name__ == "__main__":
    main()
