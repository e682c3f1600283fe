"""test_capture_backpressure.py -- a full record queue stops the proxy's
reading (back-pressure); nothing is dropped.

The trace goes to a FIFO that the test leaves unread for a while: once the
pipe is full the trace writer blocks, the record queue (`--queue-mb 1`)
fills, and the proxy must stop reading from its clients instead of dropping
records.  pymongo (4 threads x 50 calls) sends find commands carrying 64 KiB
of random bytes through the proxy to MockupDB.  Checks: while the FIFO is
not read, the calls stall (fewer than all complete in that second: the
direction, not a timing); once the test drains the FIFO every call
completes with the right answer, and the trace (the FIFO's bytes, saved)
holds one request and one reply per call, recorded = forwarded, dropped 0.

While the queue is full, 8 raw clients also connect, each sending a find
and its FIN at once (shutdown(SHUT_WR)): the proxy pauses them before
their first read, with the request and the FIN queued on an
edge-triggered socket that will have no new event; once the queue has
room they must be resumed from the loop's pending list: each gets its
reply, then EOF, and the trace holds their requests and replies.
"""
import os
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capture_lib import Env, Recorder, check, check_pairs, msgs, summary_bytes  # noqa: E402

import bson  # noqa: E402
from pymongo import MongoClient  # noqa: E402

THREADS, CALLS = 4, 50
DOC = {"_id": "test-doc-1", "value": 42}
RAW, RAW_ID = 8, 7000000


def raw_find(port, rid):
    """Connects, sends a find and FIN at once; returns the socket."""
    body = bson.encode({"find": "test_col", "filter": {"_id": "test-doc-1"},
                        "$db": "benchmark_db"})
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(struct.pack("<iiiiIB", 21 + len(body), rid, 0, 2013, 0, 0) + body)
    s.shutdown(socket.SHUT_WR)
    return s


def raw_reply(s, timeout=30):
    """Everything s receives until EOF (None: no EOF in time)."""
    s.settimeout(timeout)
    data = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                return data
            data += b
    except (socket.timeout, ConnectionResetError):
        return None


def main():
    with Env() as env:
        mock = env.start_mock()
        fifo = env.path("trace.fifo")
        os.mkfifo(fifo, 0o600)
        # the read end first (non-blocking), so the proxy's open succeeds
        rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        cap = env.start_capture(mock, out=fifo, extra=["--force", "--queue-mb", "1"])
        rec = Recorder()
        client = MongoClient("127.0.0.1", cap.port, event_listeners=[rec],
                             maxPoolSize=THREADS, serverSelectionTimeoutMS=10000,
                             socketTimeoutMS=60000)
        col = client.benchmark_db.test_col
        done = [0]
        errors = []
        lock = threading.Lock()

        def worker():
            try:
                for _ in range(CALLS):
                    pad = os.urandom(32768).hex()  # 64 KiB, incompressible-ish
                    got = col.find_one({"_id": "test-doc-1", "pad": pad})
                    if got != DOC:  # MockupDB matches on _id
                        errors.append(got)
                    with lock:
                        done[0] += 1
            except Exception as e:  # reported below
                errors.append(repr(e))

        threads = [threading.Thread(target=worker) for _ in range(THREADS)]
        for t in threads:
            t.start()
        time.sleep(2.0)
        with lock:
            stalled_at = done[0]
        check(stalled_at < THREADS * CALLS,
              "all %d calls completed while the trace was not read: no back-pressure"
              % stalled_at)
        raws = [raw_find(cap.port, RAW_ID + i) for i in range(RAW)]

        saved = env.path("trace.zst")
        stop_reading = threading.Event()

        def drain():
            os.set_blocking(rfd, True)
            with open(saved, "wb") as f:
                while True:
                    b = os.read(rfd, 1 << 20)
                    if not b:
                        break
                    f.write(b)
            stop_reading.set()

        dr = threading.Thread(target=drain)
        dr.start()
        for t in threads:
            t.join(60)
        check(not any(t.is_alive() for t in threads), "calls still blocked after draining")
        check(not errors, "calls failed: %r" % errors[:3])
        check(done[0] == THREADS * CALLS, "%d of %d calls" % (done[0], THREADS * CALLS))
        for i, s in enumerate(raws):
            got = raw_reply(s)
            s.close()
            check(got is not None, "raw client %d (find + FIN while paused): no reply "
                  "and EOF" % i)
            check(len(got) >= 16 and struct.unpack("<i", got[:4])[0] == len(got) and
                  struct.unpack("<i", got[8:12])[0] == RAW_ID + i,
                  "raw client %d: got %d bytes, not one reply to its find" % (i, len(got)))
        client.close()
        text = cap.stop()
        dr.join(30)
        check(stop_reading.is_set(), "the FIFO did not reach end of file")
        os.close(rfd)

        recs = env.dump(saved)
        check(recs[-1]["type"] == "end", "trace does not end with an end record")
        check_pairs(recs, rec.named("find"), "find")
        check(rec.count("find") == THREADS * CALLS, "%d finds seen" % rec.count("find"))
        check_pairs(recs, [(RAW_ID + i, "find") for i in range(RAW)], "raw find + FIN")
        recorded, forwarded, dropped = summary_bytes(text)
        total = sum(r["len"] for r in msgs(recs))
        check(recorded == forwarded == total,
              "recorded %d, forwarded %d, dump total %d" % (recorded, forwarded, total))
        check(dropped == 0, "dropped %d" % dropped)
        print("ok: %d of %d calls done while the trace was unread; %d raw find + FIN "
              "resumed; %d messages, %d bytes"
              % (stalled_at, THREADS * CALLS, RAW, len(msgs(recs)), total))


if __name__ == "__main__":
    main()
