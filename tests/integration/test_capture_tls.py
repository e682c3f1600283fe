"""test_capture_tls.py -- `mtrace capture` terminating TLS (--tls-cert,
--target-tls), with real drivers and a real TLS upstream.

A throwaway CA and certificates are made with the openssl CLI (tls_lib.py).
The TLS upstream is MockupDB behind `socat OPENSSL-LISTEN` with the test
server certificate.

1. pymongo (tls=True, tlsCAFile) through the proxy (--tls-cert server.pem,
   --target-tls --target-tls-ca ca.pem, --target localhost:PORT: SNI and
   the name checked): sequential and threaded find_one, a 3-batch cursor,
   an insert of a 6 MB document (TLS records, partial writes), a failing
   command; then the Node.js driver (tls=true&tlsCAFile=) through the same
   proxy.  Every call gets the right answer; the trace holds the
   plaintext: exactly one request and one reply per call (response_to),
   recorded = forwarded = the dump's total; the header names the TLS legs.
2. Failures against that proxy, each with its log line, the proxy serving a
   good TLS client afterwards and the trace readable: a plain pymongo
   client; a client that trusts another CA; a client that sends half a
   ClientHello and closes; garbage (an HTTP request); a client that
   connects and sends nothing (--msg-timeout-s 1).
3. A target whose certificate does not verify (--target-tls-ca of another
   CA): the client is closed, "TLS handshake with the target" logged,
   conn_close upstream-fail, then --target-tls-insecure against the same
   target works (and says NOT verified).
4. TLS client -> plain upstream with --delay-ms 2 (held replies written
   through TLS); plain client -> TLS upstream.
5. Mutual TLS (--tls-ca): a client with a certificate of the CA works,
   one without is refused and logged.  A target that requires client
   certificates: refused without --target-tls-cert, each connection
   logged with the target's reason (pymongo; then clients that hold their
   Finished, so the proxy forwards their first message into the target's
   reset before it reads the target's alert), served with it.
6. A burst of 40 replies of 256 KiB (10 MiB) from a raw upstream behind
   socat TLS to a raw TLS client that reads slowly: every byte arrives in
   order (TLS writes to a full socket resume on EPOLLOUT), the upstream's
   close reaches the client as close_notify + EOF, and the trace holds the
   40 replies to the one request.
Each case also checks the trace's tls records (docs/trace-format.md 2.7,
check_tls): every connection that forwarded messages has exactly one
completed handshake per TLS leg, with the version the peers negotiated
(probed first with Python's ssl against the TLS upstream; the raw client
of case 6 compares version and cipher with what its socket reports),
0 < handshake_ns < 10 s, the client leg starting at the conn_open's t_ns,
every handshake before the connection's first message; failed handshakes
are recorded (leg, error) one for one with the log lines; `mtrace stats
--json` counts the same (tls.client / tls.target) and `mtrace dump` prints
each one.
"""
import json
import os
import re
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capture_lib import (MTRACE, TOP, Env, RawUpstream, Recorder, check, check_pairs,  # noqa: E402
                         msgs, op_msg, op_msg_burst, recv_msg,
                         summary_bytes, wait_closed)
from tls_lib import client_hello, late_finished_client, make_certs, start_socat_tls  # noqa: E402

from pymongo import MongoClient  # noqa: E402
from pymongo.errors import OperationFailure, PyMongoError  # noqa: E402

DOC = {"_id": "test-doc-1", "value": 42}


def client(port, **kw):
    return MongoClient("mongodb://127.0.0.1:%d/?directConnection=true" % port,
                       serverSelectionTimeoutMS=kw.pop("sst", 5000), **kw)


def tls_client(port, ca, **kw):
    return client(port, tls=True, tlsCAFile=ca, **kw)


def good_call(port, ca, what):
    """One TLS find_one through the proxy; fails the test if it fails."""
    c = tls_client(port, ca)
    try:
        check(c.benchmark_db.test_col.find_one({"_id": DOC["_id"]}) == DOC,
              "%s: wrong document" % what)
    finally:
        c.close()


def must_fail(c, what):
    """c's first command must fail (pymongo error), quickly."""
    t0 = time.time()
    try:
        c.benchmark_db.test_col.find_one({"_id": DOC["_id"]})
        check(False, "%s: the call succeeded" % what)
    except PyMongoError as e:
        print("%s: failed as expected in %.1f s: %s" % (what, time.time() - t0,
                                                          str(e)[:120]))
    finally:
        c.close()


FAIL_RE = r"TLS handshake (with the client failed|not complete)"


def log_lines(cap, pattern=FAIL_RE):
    return [l for l in cap.stderr().splitlines() if re.search(pattern, l)]


def wait_log(cap, pattern, what, skip=0, limit=10):
    """Waits for a log line matching pattern after the first skip ones
    (those that were there before the case ran); returns how many match."""
    deadline = time.time() + limit
    while time.time() < deadline:
        lines = log_lines(cap, pattern)
        if len(lines) > skip:
            print("log (%s): %s" % (what, lines[skip][:240]))
            return len(lines)
        time.sleep(0.05)
    check(False, "%s: no new log line /%s/ in:\n%s" % (what, pattern, cap.stderr()[-3000:]))


def pymongo_workload(port, ca):
    """Case 1's pymongo calls; returns the Recorder."""
    rec = Recorder()
    c = tls_client(port, ca, event_listeners=[rec])
    col = c.benchmark_db.test_col
    for _ in range(30):
        check(col.find_one({"_id": DOC["_id"]}) == DOC, "sequential find_one")
    errors = []

    def worker():
        try:
            for _ in range(20):
                if col.find_one({"_id": DOC["_id"]}) != DOC:
                    errors.append("wrong document")
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))
    ts = [threading.Thread(target=worker) for _ in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    check(not errors, "threaded find_one: %r" % errors[:3])
    many = list(c.benchmark_db.many.find().batch_size(100))
    check(len(many) == 250 and many[249] == {"_id": 249, "x": 249 * 249},
          "cursor: %d docs" % len(many))
    res = c.benchmark_db.big.insert_one({"blob": b"\x5a" * (6 << 20)})
    check(res.acknowledged, "big insert not acknowledged")
    try:
        c.benchmark_db.command("fail_me")
        check(False, "fail_me succeeded")
    except OperationFailure as e:
        check(e.code == 2, "fail_me code %r" % e.code)
    c.close()
    return rec


def check_trace(env, cap, text, ids, what):
    """The trace of a clean run: header, pairs for ids, only handshakes
    besides, recorded = forwarded = dump total, nothing flagged."""
    recs = env.dump(cap.out)
    check(recs[0]["type"] == "header" and recs[-1]["type"] == "end", "%s: trace frame" % what)
    check_pairs(recs, ids, what)
    recorded, forwarded, dropped = summary_bytes(text)
    total = sum(r["len"] for r in msgs(recs))
    check(recorded == forwarded == total and dropped == 0,
          "%s: recorded %d, forwarded %d, dump %d, dropped %d" %
          (what, recorded, forwarded, total, dropped))
    for r in msgs(recs):
        check(not r["trace_flags"], "%s: message flagged %r" % (what, r["trace_flags"]))
    return recs


LEG = {0: "client", 1: "target"}


def tls_recs(recs, leg=None, ok=None):
    return [r for r in recs if r["type"] == "tls" and (leg is None or r["leg"] == leg)
            and (ok is None or r["ok"] == ok)]


def probe_version(port, ca):
    """The TLS version and cipher Python's ssl negotiates with port."""
    ctx = ssl.create_default_context(cafile=ca)
    with ctx.wrap_socket(socket.create_connection(("127.0.0.1", port)),
                         server_hostname="localhost") as s:
        return s.version(), s.cipher()[0]


def check_tls_stats(trace, recs, version, what):
    """`mtrace stats --json` and `mtrace dump` agree with the tls records."""
    r = subprocess.run([MTRACE, "stats", "--json", trace], capture_output=True, text=True,
                       timeout=60)
    check(r.returncode == 0, "%s: stats exit %d: %s" % (what, r.returncode, r.stderr))
    st = json.loads(r.stdout)["tls"]
    for leg in LEG.values():
        ok, bad, s = tls_recs(recs, leg, True), tls_recs(recs, leg, False), st[leg]
        check(s["handshakes"] == len(ok) and s["failed"] == len(bad),
              "%s: stats tls.%s %r, records %d ok %d failed" % (what, leg, s, len(ok), len(bad)))
        hm = s["handshake_ms"]
        check(hm["count"] == len(ok), "%s: stats %s handshake_ms %r" % (what, leg, hm))
        if ok:
            top = max(x["handshake_ns"] for x in ok) / 1e6
            check(s["versions"] == {version: len(ok)} and
                  0 < hm["p50"] <= hm["p99"] <= hm["max"] and abs(hm["max"] - top) < 1e-5,
                  "%s: stats tls.%s %r (max record %.6f ms)" % (what, leg, s, top))
    r = subprocess.run([MTRACE, "dump", trace], capture_output=True, text=True, timeout=60)
    lines = [l for l in r.stdout.splitlines() if re.search(r" conn=\d+ tls (client|target) ", l)]
    check(len(lines) == len(tls_recs(recs)), "%s: dump prints %d tls lines for %d records" %
          (what, len(lines), len(tls_recs(recs))))


def check_tls(recs, trace, legs, version, what):
    """The tls records of a proxy trace whose TLS legs are legs (0 client,
    1 target); see the top of this file.  Returns the records by conn."""
    opens = {r["conn"]: r for r in recs if r["type"] == "conn_open"}
    first = {}
    for m in msgs(recs):
        first.setdefault(m["conn"], m["t_ns"])
    by = {}
    for r in tls_recs(recs):
        o = opens.get(r["conn"])
        check(o is not None, "%s: tls record of unknown conn %r" % (what, r))
        check(r["leg"] in [LEG[l] for l in legs], "%s: tls record of leg %r" % (what, r))
        by.setdefault(r["conn"], []).append(r)
        start = r["t_ns"] - r["handshake_ns"]
        check(0 < r["handshake_ns"] < 10e9 and
              (start == o["t_ns"] if r["leg"] == "client" else start >= o["t_ns"]),
              "%s: handshake_ns %d, starts at %d, conn opened at %d (%r)" %
              (what, r["handshake_ns"], start, o["t_ns"], r))
        if r["ok"]:
            check(r["version"] == version and r["cipher"].startswith("TLS_") and
                  r["error"] is None, "%s: tls record %r, want version %s" % (what, r, version))
            check(r["t_ns"] <= first.get(r["conn"], r["t_ns"]),
                  "%s: handshake done after the first message: %r" % (what, r))
        else:
            check(r["error"], "%s: failed tls record without error: %r" % (what, r))
    want = sorted(LEG[l] for l in legs)
    for conn in first:
        got = by.get(conn, [])
        check(sorted(r["leg"] for r in got) == want and all(r["ok"] for r in got),
              "%s: conn %d forwarded messages with tls records %r" % (what, conn, got))
    check_tls_stats(trace, recs, version, what)
    hs = sorted(r["handshake_ns"] / 1e6 for r in tls_recs(recs, ok=True))
    print("%s: %d tls records, %d connections; handshakes %s ms" % (
        what, len(tls_recs(recs)), len(opens),
        "%.2f..%.2f" % (hs[0], hs[-1]) if hs else "none"))
    return by


def case_full(env, certs, mock, tls_up, version):
    ca = certs["ca"]
    cap = env.start_capture("localhost:%d" % tls_up, extra=[
        "--tls-cert", certs["server_pem"], "--target-tls", "--target-tls-ca", ca,
        "--msg-timeout-s", "1"])
    t0 = time.time()
    rec = pymongo_workload(cap.port, ca)
    print("pymongo through TLS both ways: %d commands in %.1f s" % (len(rec.cmds),
                                                                     time.time() - t0))
    uri = ("mongodb://127.0.0.1:%d/?directConnection=true&tls=true&tlsCAFile=%s"
           % (cap.port, ca))
    r = subprocess.run(["node", os.path.join(TOP, "tests/integration/capture_node_client.js"),
                        uri, "20", "30"], capture_output=True, text=True, timeout=120)
    out = r.stdout.strip().splitlines()
    check(r.returncode == 0 and out, "node client failed (%d): %s %s" %
          (r.returncode, r.stdout[-1500:], r.stderr[-1500:]))
    node = json.loads(out[-1])
    check(node["ok"], "node client: %s" % node.get("error"))
    print("node through TLS both ways: %d commands" % len(node["ids"]))

    # --- failures, each followed by a good client ---
    def plain():
        must_fail(client(cap.port, sst=1500), "plain client to the TLS port")

    def untrusting():
        must_fail(tls_client(cap.port, certs["other_ca"], sst=1500), "client trusting another CA")

    def half_hello():
        hello = client_hello()
        s = socket.create_connection(("127.0.0.1", cap.port))
        s.sendall(hello[: len(hello) // 2])
        time.sleep(0.2)
        s.close()

    def garbage():
        s = socket.create_connection(("127.0.0.1", cap.port))
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + os.urandom(200))
        print("garbage connection closed after %.2f s" % wait_closed(s, 5, "garbage"))
        s.close()

    def silent():
        s = socket.create_connection(("127.0.0.1", cap.port))
        took = wait_closed(s, 5, "silent TLS connection")
        s.close()
        check(took < 4, "silent connection closed after %.1f s" % took)

    for what, action, pattern in (
            ("plain client", plain, r"client failed: wrong version number"),
            ("untrusting client", untrusting, r"client failed: [^\n]*unknown ca"),
            ("half a ClientHello", half_hello, r"client failed: [^\n]*closed the connection"),
            ("garbage", garbage, r"client failed: (wrong version number|http request|"
                                 r"unknown protocol)"),
            ("silent client", silent, r"TLS handshake not complete after")):
        skip = len(log_lines(cap, pattern))
        action()
        wait_log(cap, pattern, what, skip)
        good_call(cap.port, ca, "after " + what)

    text = cap.stop()
    recs = check_trace(env, cap, text, rec.cmds, "tls both ways")
    check_pairs(recs, node["ids"], "node over TLS")
    hdr = recs[0]["source_desc"]
    check("client TLS, target TLS verified" in hdr, "header source_desc: %r" % hdr)
    # pymongo's monitor retries: a failing client may open several
    # connections; each is logged, counted and closed with reason error
    nlog = len(log_lines(cap))
    m = re.search(r"(\d+) client handshakes failed", text)
    check(nlog >= 5 and m is not None and int(m.group(1)) == nlog,
          "%d failure lines, summary: %s" % (nlog, m.group(0) if m else text))
    closes = [r for r in recs if r["type"] == "conn_close"]
    errs = [r for r in closes if r["reason"] == "error"]
    check(len(errs) == nlog, "%d conn_close reason error, want %d (%r)" %
          (len(errs), nlog, sorted({r["reason"] for r in closes})))
    # every connection has its client-leg record: the failed ones one for
    # one with the log lines, each failure with OpenSSL's reason
    by = check_tls(recs, cap.out, (0, 1), version, "tls both ways")
    check(all(any(r["leg"] == "client" for r in by.get(c, [])) for c in
              {r["conn"] for r in recs if r["type"] == "conn_open"}),
          "a connection without a client-leg tls record")
    bad = tls_recs(recs, "client", False)
    check(len(bad) == nlog and not tls_recs(recs, "target", False),
          "%d failed client tls records, %d failure lines; target failures %r" %
          (len(bad), nlog, tls_recs(recs, "target", False)))
    check(any("wrong version number" in r["error"] for r in bad) and
          any("unknown ca" in r["error"] for r in bad) and
          any("--msg-timeout-s" in r["error"] for r in bad),
          "failed tls records' errors: %r" % sorted({r["error"] for r in bad}))
    check({x["conn"] for x in errs} >= {r["conn"] for r in bad},
          "failed handshakes without conn_close error")
    big = [r for r in msgs(recs, "c2s") if r["cmd"] == "insert" and r["coll"] == "big"]
    check(len(big) == 1 and big[0]["len"] > 6 << 20, "6 MB insert in the trace: %r" %
          [b["len"] for b in big])
    print("ok: TLS both ways, %d pymongo + %d node commands, %d messages; %d failed "
          "handshakes logged, counted and closed" % (len(rec.cmds), len(node["ids"]),
                                                      len(msgs(recs)), nlog))


def case_bad_target(env, certs, tls_up, version):
    ca = certs["ca"]
    cap = env.start_capture("localhost:%d" % tls_up, extra=[
        "--tls-cert", certs["server_pem"], "--target-tls", "--target-tls-ca",
        certs["other_ca"]])
    must_fail(tls_client(cap.port, ca, sst=1500), "target not trusted")
    wait_log(cap, r"TLS handshake with the target [^\n]*certificate verify failed[^\n]*",
             "target not trusted")
    text = cap.stop()
    recs = env.dump(cap.out)
    closes = [r for r in recs if r["type"] == "conn_close"]
    check(closes and all(r["reason"] == "upstream-fail" for r in closes),
          "conn_close reasons %r" % [r["reason"] for r in closes])
    check(re.search(r"[1-9]\d* upstream failures", text), "summary: %s" % text)
    bad = tls_recs(recs, "target", False)
    check(len(bad) == len(closes) and all("certificate verify failed" in r["error"] for r in bad)
          and {r["conn"] for r in bad} == {r["conn"] for r in closes},
          "failed target tls records %r for %d upstream-fail closes" % (bad, len(closes)))
    check_tls(recs, cap.out, (0, 1), version, "target not trusted")

    cap = env.start_capture("localhost:%d" % tls_up, extra=[
        "--tls-cert", certs["server_pem"], "--target-tls", "--target-tls-insecure"])
    check("NOT verified" in cap.stderr(), "insecure not said: %s" % cap.stderr())
    good_call(cap.port, ca, "--target-tls-insecure")
    cap.stop()
    recs = env.dump(cap.out)
    check_tls(recs, cap.out, (0, 1), version, "--target-tls-insecure")
    up = tls_recs(recs, "target", True)
    check(up and all(r["peer_cert"] and not r["peer_verified"] and r["sni"] == "localhost"
                     for r in up), "insecure target tls records %r" % up)
    print("ok: unverifiable target refused and logged; --target-tls-insecure works")


def case_mixed(env, certs, mock, tls_up, version):
    ca = certs["ca"]
    # TLS client -> plain upstream, with held replies
    cap = env.start_capture(mock, extra=["--tls-cert", certs["server_crt"], "--tls-key",
                                         certs["server_key"], "--delay-ms", "2"])
    rec = Recorder()
    c = tls_client(cap.port, ca, event_listeners=[rec])
    t0 = time.time()
    for _ in range(20):
        check(c.benchmark_db.test_col.find_one({"_id": DOC["_id"]}) == DOC, "tls->plain find")
    took = time.time() - t0
    c.close()
    check(took >= 20 * 0.002, "20 delayed finds took %.3f s" % took)
    text = cap.stop()
    recs = check_trace(env, cap, text, rec.cmds, "tls->plain")
    check("client TLS, target plain" in recs[0]["source_desc"], recs[0]["source_desc"])
    check_tls(recs, cap.out, (0,), version, "tls->plain")
    # plain client -> TLS upstream
    cap = env.start_capture("127.0.0.1:%d" % tls_up, extra=["--target-tls", "--target-tls-ca", ca])
    rec = Recorder()
    c = client(cap.port, event_listeners=[rec])
    for _ in range(20):
        check(c.benchmark_db.test_col.find_one({"_id": DOC["_id"]}) == DOC, "plain->tls find")
    check(len(list(c.benchmark_db.many.find().batch_size(50))) == 250, "plain->tls cursor")
    c.close()
    text = cap.stop()
    recs = check_trace(env, cap, text, rec.cmds, "plain->tls")
    check("client plain, target TLS verified" in recs[0]["source_desc"], recs[0]["source_desc"])
    check_tls(recs, cap.out, (1,), version, "plain->tls")
    # an IP target: no SNI, the certificate checked against its IP SAN
    up = tls_recs(recs, "target")
    check(all(r["sni"] is None and r["peer_verified"] for r in up), "plain->tls records %r" % up)
    print("ok: TLS client -> plain upstream (--delay-ms 2), plain client -> TLS upstream "
          "(IP target checked against the SAN)")


def case_mutual(env, certs, mock, version):
    ca = certs["ca"]
    cap = env.start_capture(mock, extra=["--tls-cert", certs["server_pem"], "--tls-ca", ca])
    c = tls_client(cap.port, ca, tlsCertificateKeyFile=certs["client_pem"])
    check(c.benchmark_db.test_col.find_one({"_id": DOC["_id"]}) == DOC, "mutual TLS find")
    c.close()
    must_fail(tls_client(cap.port, ca, sst=1500), "no client certificate")
    wait_log(cap, r"TLS handshake with the client failed: [^\n]*certificate[^\n]*",
             "no client certificate")
    cap.stop()
    recs = env.dump(cap.out)
    check_tls(recs, cap.out, (0,), version, "mutual TLS")
    good = tls_recs(recs, "client", True)
    check(good and all(r["peer_cert"] and r["peer_verified"] for r in good),
          "mutual TLS: client certificates not recorded as verified: %r" % good)
    check(tls_recs(recs, "client", False), "mutual TLS: the refused client has no failed record")
    print("ok: --tls-ca requires a client certificate")
    strict_up = start_socat_tls(env, certs["server_pem"], mock, client_ca=ca)
    tls_args = ["--tls-cert", certs["server_pem"], "--target-tls", "--target-tls-ca", ca]
    cap = env.start_capture("localhost:%d" % strict_up, extra=tls_args)
    must_fail(tls_client(cap.port, ca, sst=1500), "target wants a client certificate")
    # TLS 1.3: the client's handshake is over before the server checks the
    # certificate; its alert comes with the first read
    wait_log(cap, r"(TLS handshake with the target|TLS error from the server)[^\n]*"
             r"certificate required[^\n]*--target-tls-cert", "no --target-tls-cert")
    # clients whose handshake ends after the target refused the proxy's:
    # their first message meets the target's reset; the alert the target
    # sent before it is still read and logged, for each connection (the
    # line names the client's port)
    for i in range(3):
        s = late_finished_client(cap.port, ca, op_msg(100 + i, {"hello": 1, "$db": "admin"}),
                                 0.3)
        port = s.getsockname()[1]
        wait_closed(s, 10, "client of a target that refused the proxy")
        s.close()
        wait_log(cap, r"from 127\.0\.0\.1:%d: TLS error from the server: [^\n]*certificate "
                 r"required[^\n]*--target-tls-cert" % port,
                 "client %d holding its Finished, no --target-tls-cert" % port)
    cap.stop()
    cap = env.start_capture("localhost:%d" % strict_up,
                            extra=tls_args + ["--target-tls-cert", certs["client_pem"]])
    good_call(cap.port, ca, "--target-tls-cert")
    cap.stop()
    print("ok: --target-tls-cert for a target that requires client certificates")


class Burst(RawUpstream):
    """Reads one request, answers it with N replies of SIZE bytes, closes."""
    N, SIZE = 40, 256 << 10

    def __init__(self):
        super().__init__(conns=1)
        self.sent = b""
        self.start()

    def serve_conn(self, s):
        req = recv_msg(s, 10)
        rid = struct.unpack("<i", req[4:8])[0]
        self.sent = op_msg_burst(self.N, self.SIZE, 1000, rid, b"\x61")
        s.sendall(self.sent)
        s.close()


def case_burst(env, certs, version):
    ca = certs["ca"]
    up = Burst()
    tls_up = start_socat_tls(env, certs["server_pem"], up.port)
    cap = env.start_capture("localhost:%d" % tls_up, extra=[
        "--tls-cert", certs["server_pem"], "--target-tls", "--target-tls-ca", ca])
    ctx = ssl.create_default_context(cafile=ca)
    raw = socket.create_connection(("127.0.0.1", cap.port))
    s = ctx.wrap_socket(raw, server_hostname="localhost")
    seen = (s.version(), s.cipher()[0])
    s.sendall(op_msg(77, {"find": "big", "$db": "benchmark_db"}))
    # a slow reader: the proxy's TLS writes fill the socket and wait for
    # EPOLLOUT (chunks in a list: bytes += would copy 10 MB 600 times)
    t0, parts, how = time.time(), [], "eof"
    s.settimeout(20)
    try:
        while True:
            chunk = s.recv(64 << 10)
            if not chunk:
                break
            parts.append(chunk)
            if len(parts) % 8 == 0:
                time.sleep(0.005)
    except (OSError, socket.timeout) as e:
        how = repr(e)
    data = b"".join(parts)
    print("burst: %d bytes in %d reads, %.1f s" % (len(data), len(parts), time.time() - t0))
    check(how == "eof", "burst: ended with %s after %d bytes" % (how, len(data)))
    check(up.join(10) and up.error is None, "upstream: %s" % up.error)
    check(data == up.sent, "burst: got %d bytes, sent %d, equal %s" %
          (len(data), len(up.sent), data == up.sent))
    s.close()
    text = cap.stop()
    recs = env.dump(cap.out)
    reps = msgs(recs, "s2c")
    check(len(reps) == Burst.N and all(r["response_to"] == 77 for r in reps),
          "burst: %d replies in the trace" % len(reps))
    recorded, forwarded, _ = summary_bytes(text)
    check(recorded == forwarded, "burst: recorded %d forwarded %d" % (recorded, forwarded))
    closes = [r for r in recs if r["type"] == "conn_close"]
    check([r["reason"] for r in closes] == ["normal"], "burst close %r" % closes)
    by = check_tls(recs, cap.out, (0, 1), version, "burst")
    cli = [r for r in by[closes[0]["conn"]] if r["leg"] == "client"]
    check(len(cli) == 1 and (cli[0]["version"], cli[0]["cipher"]) == seen and
          cli[0]["sni"] == "localhost",
          "burst: client leg %r, the client's socket says %r" % (cli, seen))
    print("ok: %d bytes of replies through TLS both ways to a slow reader, close_notify "
          "and EOF, %d replies recorded" % (len(data), len(reps)))


def main():
    with Env() as env:
        certs = make_certs(env.tmp)
        mock = env.start_mock()
        tls_up = start_socat_tls(env, certs["server_pem"], mock)
        version, cipher = probe_version(tls_up, certs["ca"])
        print("Python's ssl and the TLS upstream negotiate %s %s" % (version, cipher))
        case_full(env, certs, mock, tls_up, version)
        case_bad_target(env, certs, tls_up, version)
        case_mixed(env, certs, mock, tls_up, version)
        case_mutual(env, certs, mock, version)
        case_burst(env, certs, version)


if __name__ == "__main__":
    main()
