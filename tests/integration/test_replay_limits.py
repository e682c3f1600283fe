#!/usr/bin/python3
"""test_replay_limits.py -- per-connection limits of `mtrace replay` against
bad clients over the network, while a pymongo client keeps working:

  slow-loris (one byte a second)  -> closed by --msg-timeout-s
  idle connection                 -> closed by --idle-timeout-s
  length over --max-msg-bytes     -> closed at the header, nothing buffered
  negative messageLength          -> closed as bad input
  flood of pipelined finds from a client that never reads its replies
                                  -> reading stops (bounded memory), then
                                     closed as idle (no write progress)
  a connection over --max-conns   -> closed at once; one closed makes room

Each close has its log line; the summary counts timeouts and bad input;
pymongo (heartbeat 0.5 s, so its monitor is never idle) sees no error.
The trace is recorded first: pymongo -> mtrace capture -> mockmongo.py.
The bad clients are capture_lib's BadClients, which test_capture_limits.py
sends to the proxy.  Runtime about 10 s.
"""
import os
import re
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capture_lib import (BadClients, Env, GoodClient, check, flood,  # noqa: E402
                         op_msg, rss_kb, wait_closed)

from pymongo import MongoClient  # noqa: E402


def miss(rid):
    # a find the trace does not hold: a ~300-byte NoMatchingDocument reply
    return op_msg(rid, {"find": "test_col", "filter": {"_id": "nope"},
                        "$db": "benchmark_db"})


def main():
    with Env() as env:
        cap = env.start_capture(target=env.start_mock())
        c = MongoClient("mongodb://127.0.0.1:%d/?directConnection=true" % cap.port,
                        serverSelectionTimeoutMS=5000)
        for _ in range(2):
            check(c.benchmark_db.test_col.find_one({"_id": "test-doc-1"})["value"] == 42,
                  "workload through capture failed")
        c.close()
        cap.stop()

        rep, port, log = env.start_replay(cap.out, extra=[
            "--threads", "1", "--msg-timeout-s", "1", "--idle-timeout-s", "2",
            "--max-msg-bytes", "100000"])
        good = GoodClient(port)
        good.start()
        time.sleep(0.5)
        bad = BadClients(port).start()

        # 100 000 pipelined requests (~8 MB), replies (~30 MB) never read
        ft, done, fsock = flood(port, b"".join(miss(i + 1) for i in range(100000)))
        peak = 0
        tf = time.time()
        while ft.is_alive() and time.time() - tf < 10:
            peak = max(peak, rss_kb(rep.pid))
            time.sleep(0.1)
        print("flood: sender %s after %.1f s; replay peak RSS meanwhile %d kB" %
              ((done or ["blocked"])[0], time.time() - tf, peak))
        check(done == ["closed"], "the server read a never-reading client to the end")
        check(peak < 300 * 1024, "replay RSS %d kB during the flood" % peak)
        print("idle closed after another %.1f s" % wait_closed(bad.idle, 10))
        bad.check_loris(8)
        fsock.close()
        good.finish()

        text = stop_replay(rep, log)
        print(text)
        for want in [r"incomplete message: .* \(--msg-timeout-s\); closing it",
                     r"idle for .* \(--idle-timeout-s\); closing it",
                     r"client does not read its replies",
                     r"exceeds --max-msg-bytes 100000",
                     r"messageLength -5",
                     r"bad input 2, timed out [3-9]"]:
            check(re.search(want, text), "no %r in replay's log" % want)
        max_conns(env, cap.out)
    print("OK")


def stop_replay(rep, log):
    # stops replay, checks its exit status; its log
    rep.terminate()
    check(rep.wait(10) == 0, "replay exited %s" % rep.returncode)
    with open(log) as f:
        return f.read()


def answered(sock, rid):
    # sends a find the trace does not hold; True when a reply comes back
    sock.sendall(miss(rid))
    got = b""
    while len(got) < 16:
        b = sock.recv(65536)
        if not b:
            return False
        got += b
    return True


def max_conns(env, trace):
    rep, port, log = env.start_replay(trace, extra=["--max-conns", "2"])
    a = socket.create_connection(("127.0.0.1", port), 5)
    b = socket.create_connection(("127.0.0.1", port), 5)
    check(answered(a, 1) and answered(b, 2), "two connections under --max-conns 2")
    over = socket.create_connection(("127.0.0.1", port), 5)
    over.settimeout(5)
    check(over.recv(1) == b"", "the third connection was not closed")
    a.close()
    for _ in range(50):  # its close reaches the loop
        c = socket.create_connection(("127.0.0.1", port), 5)
        c.settimeout(5)
        try:
            if answered(c, 3):
                break
        except ConnectionResetError:
            pass
        c.close()
        time.sleep(0.1)
    else:
        check(False, "no room after a connection closed")
    check(answered(b, 4), "the second connection stopped answering")
    c.close()
    b.close()
    over.close()
    text = stop_replay(rep, log)
    check(re.search(r"connection refused: 2 connections open \(limit\)", text),
          "no refusal in replay's log: " + text)
    print("ok: --max-conns 2 refused the third connection, then admitted one")


if __name__ == "__main__":
    main()
