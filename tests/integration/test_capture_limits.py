"""test_capture_limits.py -- per-connection limits and --redact of the
`mtrace capture` proxy, while a pymongo client keeps working through it.

Proxy: --msg-timeout-s 1 --idle-timeout-s 2 --max-msg-bytes 100000
--redact --redact ssn, in front of mockmongo.py.

1. slow-loris (one byte a second of a valid ping): closed by
   --msg-timeout-s, log line, its prefix recorded as a partial message.
2. an idle connection: closed by --idle-timeout-s (close reason "idle").
3. a header announcing 200000 bytes: closed at once (--max-msg-bytes).
4. a negative messageLength: closed as "not MongoDB wire protocol".
5. a flood of pipelined pings from a client that never reads (SO_RCVBUF
   4 KiB): the proxy's buffers stay bounded (RSS), and the connection is
   closed as idle ("does not read its replies").
6. --redact: saslStart with a SASL payload sent by pymongo (MockupDB
   answers with an error) and a find on {ssn: ...}: the secret bytes are
   nowhere in the decompressed trace, the records are flagged "redacted",
   the rebuilt messages parse (dump shows their bodies), and `mtrace dump`
   notes the authentication conversation.
The pymongo client (heartbeat 0.5 s) sees no error throughout; recorded
bytes = forwarded bytes in the summary.  Runtime about 8 s.
"""
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capture_lib import (BadClients, Env, GoodClient, check, flood,  # noqa: E402
                         msgs, op_msg, rss_kb, summary_bytes, wait_closed)

import bson  # noqa: E402
from pymongo import MongoClient  # noqa: E402
from pymongo.errors import OperationFailure  # noqa: E402

SECRET = b"n,,n=alice,r=SECRETNONCE0123456789"
SSN = "123-45-6789"


def find_many(rid):
    # 250 documents in one reply (~6.5 kB): a flood of these fills buffers
    return op_msg(rid, {"find": "many", "batchSize": 250, "limit": 250,
                        "$db": "benchmark_db"})


def bad_clients(cap):
    bad = BadClients(cap.port).start()
    # a client that never reads its replies: the proxy's buffers stay
    # bounded and it closes the connection as not reading
    ft, done, fsock = flood(cap.port, b"".join(find_many(i + 1) for i in range(1800)))
    peak = 0
    tf = time.time()
    while "does not read its replies" not in cap.stderr() and time.time() - tf < 30:
        peak = max(peak, rss_kb(cap.proc.pid))
        time.sleep(0.1)
    print("flood: closed as not reading after %.1f s; proxy peak RSS %d kB" %
          (time.time() - tf, peak))
    check(peak < 200 * 1024, "proxy RSS %d kB during the flood" % peak)
    wait_closed(bad.idle, 10)
    bad.check_loris(30)
    fsock.close()


def redact_traffic(port):
    c = MongoClient("mongodb://127.0.0.1:%d/?directConnection=true" % port,
                    serverSelectionTimeoutMS=5000)
    try:
        c.admin.command("saslStart", 1, mechanism="SCRAM-SHA-256",
                        payload=bson.Binary(SECRET), autoAuthorize=1)
    except OperationFailure:
        pass  # MockupDB does not do SASL: the request is what matters
    c.benchmark_db.test_col.find_one({"ssn": SSN})
    c.close()


def main():
    with Env() as env:
        mock = env.start_mock()
        cap = env.start_capture(target=mock, extra=[
            "--msg-timeout-s", "1", "--idle-timeout-s", "2",
            "--max-msg-bytes", "100000", "--redact", "--redact", "ssn",
            "--threads", "1"])
        good = GoodClient(cap.port)
        good.start()
        time.sleep(0.5)
        redact_traffic(cap.port)
        bad_clients(cap)
        good.finish()
        text = cap.stop()
        print(text)
        for want in ["incomplete client message", "--msg-timeout-s)",
                     "idle for", "does not read its replies",
                     "over --max-msg-bytes 100000",
                     "messageLength -5", "redacted: "]:
            check(want in text, "no %r in the proxy's log" % want)
        rec, fwd, dropped = summary_bytes(text)
        unframed = int(re.search(r"not framed (\d+)", text).group(1))
        check(unframed == 24, "not framed %d (the negative-length client sent "
              "a 16-byte header and 8 bytes)" % unframed)
        unsent = int(re.search(r"unsent (\d+)", text).group(1))
        # everything read was recorded (or is the garbage after a bad
        # header) and was forwarded, or is the backlog of the client that
        # never read its replies
        check(rec + unframed == fwd + unsent and dropped == 0,
              "recorded %d + not framed %d != forwarded %d + unsent %d "
              "(dropped %d)" % (rec, unframed, fwd, unsent, dropped))
        check(unsent > 0, "the flood left no backlog: not a real flood")

        raw = subprocess.run(["zstd", "-dcq", cap.out], capture_output=True,
                             timeout=60).stdout
        check(len(raw) > 1000, "could not decompress the trace")
        check(SECRET not in raw, "the SASL payload is in the trace")
        check(SSN.encode() not in raw, "the ssn value is in the trace")
        r = subprocess.run([os.environ.get("MTRACE", "mtrace"), "dump", cap.out],
                           capture_output=True, text=True, timeout=60)
        check("authentication conversations" in r.stderr,
              "dump does not mark the auth conversation: %s" % r.stderr[-500:])
        recs = env.dump(cap.out)
        red = [m for m in msgs(recs) if "redacted" in m.get("trace_flags", [])]
        sasl = [m for m in red if m.get("cmd") == "saslStart" and m["dir"] == "c2s"]
        check(len(sasl) == 1 and sasl[0]["auth"], "saslStart not redacted: %s" % red)
        check(sasl[0]["body"] is not None and "payload" in sasl[0]["body"],
              "redacted saslStart does not parse: %s" % sasl[0])
        finds = [m for m in red if m.get("cmd") == "find" and m["dir"] == "c2s"]
        check(any("<redacted>" in str(m["body"]) for m in finds),
              "find on ssn not redacted")
        closes = [x for x in recs if x.get("type") == "conn_close"]
        check(any(x["reason"] == "idle" for x in closes), "no idle close record")
        part = [m for m in msgs(recs, "c2s") if "partial" in m.get("trace_flags", [])]
        check(part, "slow-loris prefix not recorded")
    print("OK")


if __name__ == "__main__":
    main()
