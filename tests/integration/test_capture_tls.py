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
   certificates: refused without --target-tls-cert (logged,
   upstream-fail), served with it.
6. A burst of 40 replies of 256 KiB (10 MiB) from a raw upstream behind
   socat TLS to a raw TLS client that reads slowly: every byte arrives in
   order (TLS writes to a full socket resume on EPOLLOUT), the upstream's
   close reaches the client as close_notify + EOF, and the trace holds the
   40 replies to the one request.
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
from capture_lib import (TOP, Env, RawUpstream, Recorder, check, check_pairs,  # noqa: E402
                         msgs, op_msg, op_msg_burst, recv_msg,
                         summary_bytes, wait_closed)
from tls_lib import client_hello, make_certs, start_socat_tls  # noqa: E402

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


def case_full(env, certs, mock, tls_up):
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
    big = [r for r in msgs(recs, "c2s") if r["cmd"] == "insert" and r["coll"] == "big"]
    check(len(big) == 1 and big[0]["len"] > 6 << 20, "6 MB insert in the trace: %r" %
          [b["len"] for b in big])
    print("ok: TLS both ways, %d pymongo + %d node commands, %d messages; %d failed "
          "handshakes logged, counted and closed" % (len(rec.cmds), len(node["ids"]),
                                                      len(msgs(recs)), nlog))


def case_bad_target(env, certs, tls_up):
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

    cap = env.start_capture("localhost:%d" % tls_up, extra=[
        "--tls-cert", certs["server_pem"], "--target-tls", "--target-tls-insecure"])
    check("NOT verified" in cap.stderr(), "insecure not said: %s" % cap.stderr())
    good_call(cap.port, ca, "--target-tls-insecure")
    cap.stop()
    print("ok: unverifiable target refused and logged; --target-tls-insecure works")


def case_mixed(env, certs, mock, tls_up):
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
    print("ok: TLS client -> plain upstream (--delay-ms 2), plain client -> TLS upstream "
          "(IP target checked against the SAN)")


def case_mutual(env, certs, mock):
    ca = certs["ca"]
    cap = env.start_capture(mock, extra=["--tls-cert", certs["server_pem"], "--tls-ca", ca])
    c = tls_client(cap.port, ca, tlsCertificateKeyFile=certs["client_pem"])
    check(c.benchmark_db.test_col.find_one({"_id": DOC["_id"]}) == DOC, "mutual TLS find")
    c.close()
    must_fail(tls_client(cap.port, ca, sst=1500), "no client certificate")
    wait_log(cap, r"TLS handshake with the client failed: [^\n]*certificate[^\n]*",
             "no client certificate")
    cap.stop()
    print("ok: --tls-ca requires a client certificate")
    strict_up = start_socat_tls(env, certs["server_pem"], mock, client_ca=ca)
    tls_args = ["--tls-cert", certs["server_pem"], "--target-tls", "--target-tls-ca", ca]
    cap = env.start_capture("localhost:%d" % strict_up, extra=tls_args)
    must_fail(tls_client(cap.port, ca, sst=1500), "target wants a client certificate")
    # TLS 1.3: the client's handshake is over before the server checks the
    # certificate; its alert comes with the first read
    wait_log(cap, r"(TLS handshake with the target|TLS error from the server)[^\n]*"
             r"certificate required[^\n]*--target-tls-cert", "no --target-tls-cert")
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


def case_burst(env, certs):
    ca = certs["ca"]
    up = Burst()
    tls_up = start_socat_tls(env, certs["server_pem"], up.port)
    cap = env.start_capture("localhost:%d" % tls_up, extra=[
        "--tls-cert", certs["server_pem"], "--target-tls", "--target-tls-ca", ca])
    ctx = ssl.create_default_context(cafile=ca)
    raw = socket.create_connection(("127.0.0.1", cap.port))
    s = ctx.wrap_socket(raw, server_hostname="localhost")
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
    print("ok: %d bytes of replies through TLS both ways to a slow reader, close_notify "
          "and EOF, %d replies recorded" % (len(data), len(reps)))


def main():
    with Env() as env:
        certs = make_certs(env.tmp)
        mock = env.start_mock()
        tls_up = start_socat_tls(env, certs["server_pem"], mock)
        case_full(env, certs, mock, tls_up)
        case_bad_target(env, certs, tls_up)
        case_mixed(env, certs, mock, tls_up)
        case_mutual(env, certs, mock)
        case_burst(env, certs)


if __name__ == "__main__":
    main()
