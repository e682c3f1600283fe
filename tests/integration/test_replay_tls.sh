#!/usr/bin/env bash
# test_replay_tls.sh -- `mtrace replay --tls-cert`: drivers that connect
# with tls=true and a CA file get the recorded answers.
#  1. The pymongo (sequential and 10 threads), Node.js and libmongoc
#     workloads are recorded through `mtrace capture` to MockupDB (plain),
#     then run against `mtrace replay --tls-cert server.pem` of their trace
#     with tls=true&tlsCAFile=ca.pem (certificates made at test time with the
#     openssl CLI, tls_lib.py): the same documents and errors, the miss
#     error for an unrecorded query.
#  2. A plain pymongo client, an HTTP request and a client that sends
#     nothing (--msg-timeout-s 1) against the TLS replay: each closed with a
#     log line, and a TLS client is served right after.
#     Requests of 8 to 45 MB (driver_bigdoc.py) recorded through
#     `capture --tls-cert` and replayed by `replay --tls-cert`: same answers.
#  3. --tls-cert + --tls-key as two files, --tls-ca: a client certificate
#     of the CA is required (pymongo with and without one).
#  4. Usage: --tls-key without --tls-cert exits 2; an unreadable
#     certificate exits 1 before listening.
#  5. TLS statistics (--summary-json "tls", the summary's TLS line): every
#     driver connection of 1. counted as a completed handshake, none
#     failed (libmongoc's single client: exactly 1); the plain client and
#     the HTTP request of 2. as not TLS, the silent client as timed out,
#     pymongo without a client certificate of 3. as such; and exactly,
#     under --tls-ca: libmongoc and 3 Python ssl clients with a client
#     certificate (one limited to TLS 1.2) complete, and one each of a
#     plain MongoDB hello, no client certificate, a certificate of another
#     CA, a client that does not trust replay's certificate, a client
#     closing at once and a silent one fail with that cause.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replay_lib.sh"
PYWL=$TOP/tests/integration/replay_workload.py
NODEWL=$TOP/tests/integration/replay_workload.js
CWL=$TOP/${BUILD:-build/release}/helpers/mongoc_workload
[ -x "$CWL" ] || fail "$CWL not built (make helpers)"
[ -d "$TOP/tests/integration/node_modules/mongodb" ] ||
    fail "mongodb@6 missing: run tools/deps.sh --check-or-install"

mkdir "$TMP/certs"
"$PYTHON" "$TOP/tests/integration/tls_lib.py" "$TMP/certs" >/dev/null || fail "cannot make certificates"
CA=$TMP/certs/ca.pem
PEM=$TMP/certs/server.pem
TQ="tls=true&tlsCAFile=$CA"

start_mock MOCK
# record each workload (plain capture, as the other replay tests)
record() { # NAME CMD... (the URI is appended)
    local name=$1
    shift
    start_capture CAP "$MOCK" "$TMP/$name.zst"
    "$@" "mongodb://127.0.0.1:$CAP/" >"$TMP/$name.capture" || fail "$name workload failed through capture"
    stop_wait $CAPTURE_PID || fail "capture exited $?"
}
record py "$PYTHON" "$PYWL"
start_capture CAP "$MOCK" "$TMP/pyt.zst"
"$PYTHON" "$PYWL" "mongodb://127.0.0.1:$CAP/" --threads 10 >"$TMP/pyt.capture" || fail "threaded workload"
stop_wait $CAPTURE_PID || fail "capture exited $?"
record node node "$NODEWL"
start_capture CAP "$MOCK" "$TMP/c.zst"
"$CWL" "mongodb://127.0.0.1:$CAP/?serverSelectionTimeoutMS=5000" >"$TMP/c.capture" || fail "mongoc workload through capture"
stop_wait $CAPTURE_PID || fail "capture exited $?"

check_replay() { # NAME MISSPATTERN
    grep -v "$2" "$TMP/$1.replay" >"$TMP/$1.hits"
    same_lines "$TMP/$1.capture" "$TMP/$1.hits"
    grep "$2" "$TMP/$1.replay" | grep -q '"error": *47' || fail "$1: the miss did not get error 47"
    echo "ok: $1 over TLS: $(wc -l <"$TMP/$1.capture") calls identical to the recording, miss reported"
}

# tls_stats JSON CHECK...: each CHECK a Python expression over d (the
# --summary-json object) and t (its "tls"), e.g. 't["failed"] == 0'
tls_stats() {
    local json=$1
    shift
    "$PYTHON" - "$json" "$@" <<'PY' || fail "TLS statistics of $json: $(cat "$json")"
import json, sys
d = json.load(open(sys.argv[1]))
t = d["tls"]
for check in sys.argv[2:]:
    if not eval(check):
        sys.exit("not true: %s (tls: %s, connections %d)" % (check, json.dumps(t), d["connections"]))
print("ok: TLS statistics: %d connections, %d handshakes completed (%s; p50 %.3f ms), %d failed %s"
      % (d["connections"], t["completed"], t["versions"], t["handshake"]["p50_ms"], t["failed"],
         {k: v for k, v in t["failed_by"].items() if v}))
PY
}
# every connection is counted once: completed, failed or aborted
ALL='t["completed"] + t["failed"] + t["aborted"] == d["connections"]'
SUMS='t["failed"] == sum(t["failed_by"].values()) and t["handshake"]["n"] == t["completed"] and t["completed"] == sum(t["versions"].values())'

# 1. pymongo, sequential and threaded, and 2. a plain client in between
start_replay REP "$TMP/py.zst" --tls-cert "$PEM" --msg-timeout-s 1 --summary-json "$TMP/s1.json"
log=$TMP/replay.$REP.log
grep -q "listening on 127.0.0.1:$REP (TLS)" "$log" || fail "no TLS listening line: $(cat "$log")"
"$PYTHON" "$PYWL" "mongodb://127.0.0.1:$REP/?$TQ" --miss >"$TMP/py.replay" || fail "pymongo over TLS failed"
check_replay py '"call": "miss"'
"$PYTHON" - "$REP" <<'PY' || fail "the plain client did not fail"
import sys
from pymongo import MongoClient
from pymongo.errors import PyMongoError
c = MongoClient("mongodb://127.0.0.1:%s/?directConnection=true" % sys.argv[1],
                serverSelectionTimeoutMS=1500)
try:
    c.benchmark_db.test_col.find_one({"_id": "test-doc-1"})
    sys.exit(1)
except PyMongoError as e:
    print("plain client failed as expected: %s" % str(e)[:100])
PY
grep -q "TLS handshake failed: wrong version number" "$log" ||
    fail "no log line for the plain client: $(tail -5 "$log")"
grep -m1 "TLS handshake failed: wrong version number" "$log"
# garbage, and a client that connects and sends nothing (--msg-timeout-s 1)
"$PYTHON" - "$REP" <<'PY' || fail "garbage / silent client not closed"
import socket, sys, time
port = int(sys.argv[1])
g = socket.create_connection(("127.0.0.1", port))
g.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
g.settimeout(5)
try:
    assert g.recv(100) == b"", "garbage: the connection stayed open"
except ConnectionResetError:
    pass  # closed with the request unread: a reset
s = socket.create_connection(("127.0.0.1", port))
t0 = time.time()
s.settimeout(10)
try:
    data = s.recv(100)
except ConnectionResetError:
    data = b""
took = time.time() - t0
assert data == b"" and took < 4, "silent: %r after %.1f s" % (data, took)
print("garbage closed at once; silent TLS client closed after %.1f s" % took)
PY
grep -q "TLS handshake failed: http request" "$log" || fail "no log line for garbage: $(tail -3 "$log")"
grep -q "TLS handshake not complete after .*; closing it" "$log" || fail "no log line for the silent client: $(tail -3 "$log")"
"$PYTHON" "$PYWL" "mongodb://127.0.0.1:$REP/?$TQ" >"$TMP/py2.replay" || fail "TLS client after the plain one"
same_lines "$TMP/py.capture" "$TMP/py2.replay"
echo "ok: a TLS client is served after a plain client, garbage and a silent client"
stop_wait $REPLAY_PID || fail "replay exited $?"
# 5. the plain pymongo client's connections (its monitor retries) and the
# HTTP request: not TLS; the silent client: timed out; nothing else (but
# a connection the plain client's exit closed before it sent anything)
tls_stats "$TMP/s1.json" "$ALL" "$SUMS" 't["aborted"] == 0' 't["completed"] >= 2' \
    't["failed_by"]["not_tls"] >= 2' 't["failed_by"]["timeout"] == 1' \
    't["failed"] == t["failed_by"]["not_tls"] + t["failed_by"]["closed"] + 1'
grep -q "TLS: [0-9]* handshakes completed (TLSv1.2 0, TLSv1.3 [0-9]*; accept to completion p50 .*), [0-9]* failed (not TLS [0-9]*, .*timed out 1)$" \
    "$TMP/replay.$REP.log" || fail "no TLS summary line: $(tail -8 "$TMP/replay.$REP.log")"
grep "TLS: " "$TMP/replay.$REP.log"

start_replay REP "$TMP/pyt.zst" --tls-cert "$PEM" --threads 2 --summary-json "$TMP/s.json"
"$PYTHON" "$PYWL" "mongodb://127.0.0.1:$REP/?$TQ" --threads 10 --miss >"$TMP/pyt.replay" || fail "threaded pymongo over TLS"
check_replay pyt '"call": "miss"'
stop_wait $REPLAY_PID || fail "replay exited $?"
# 5. N driver connections over two loops: N handshakes completed
tls_stats "$TMP/s.json" "$ALL" "$SUMS" 't["completed"] == d["connections"] >= 2' 't["failed"] == 0'

# Node.js driver
start_replay REP "$TMP/node.zst" --tls-cert "$PEM" --summary-json "$TMP/s.json"
node "$NODEWL" "mongodb://127.0.0.1:$REP/?$TQ" --miss >"$TMP/node.replay" || fail "node over TLS failed"
grep -v '"call":"miss"' "$TMP/node.replay" >"$TMP/node.hits"
same_lines "$TMP/node.capture" "$TMP/node.hits"
grep -q '"call":"miss","error":47' "$TMP/node.replay" || fail "node: miss not 47"
echo "ok: node over TLS: $(wc -l <"$TMP/node.capture") calls identical to the recording, miss reported"
stop_wait $REPLAY_PID || fail "replay exited $?"
tls_stats "$TMP/s.json" "$ALL" "$SUMS" 't["completed"] == d["connections"] >= 2' 't["failed"] == 0'

# libmongoc
start_replay REP "$TMP/c.zst" --tls-cert "$PEM" --summary-json "$TMP/s.json"
"$CWL" "mongodb://127.0.0.1:$REP/?serverSelectionTimeoutMS=5000&$TQ" --miss >"$TMP/c.replay" ||
    fail "mongoc over TLS failed"
check_replay c '"call": "miss"'
stop_wait $REPLAY_PID || fail "replay exited $?"
# a single-threaded libmongoc client: one connection, one handshake
tls_stats "$TMP/s.json" "$ALL" "$SUMS" 'd["connections"] == 1' 't["completed"] == 1' \
    't["versions"]["TLSv1.3"] == 1' 't["failed"] == 0'

# requests of several MB (8 MiB, 3 x 15 MiB near maxMessageSizeBytes, 4
# MiB): recorded through a TLS capture proxy (TLS client -> plain mock),
# replayed by a TLS replay; pymongo gets the same answers both times
CPORT=$(free_port)
"$MTRACE" capture --listen 127.0.0.1:"$CPORT" --target 127.0.0.1:"$MOCK" --tls-cert "$PEM" \
    -o "$TMP/big.zst" 2>"$TMP/big.log" &
CAPTURE_PID=$!
track_pid $CAPTURE_PID
wait_listening "$TMP/big.log" $CAPTURE_PID capture
"$PYTHON" "$TOP/tests/integration/driver_bigdoc.py" "mongodb://127.0.0.1:$CPORT/?$TQ" >"$TMP/big.capture" ||
    fail "bigdoc through the TLS proxy"
stop_wait $CAPTURE_PID || fail "capture exited $?"
grep -q '"error"' "$TMP/big.capture" && fail "bigdoc through the TLS proxy: $(cat "$TMP/big.capture")"
grep -q "recorded \([0-9]*\) bytes = forwarded" "$TMP/big.log" || fail "big: recorded != forwarded: $(tail -3 "$TMP/big.log")"
start_replay REP "$TMP/big.zst" --tls-cert "$PEM"
"$PYTHON" "$TOP/tests/integration/driver_bigdoc.py" "mongodb://127.0.0.1:$REP/?$TQ" >"$TMP/big.replay" ||
    fail "bigdoc against the TLS replay"
same_lines "$TMP/big.capture" "$TMP/big.replay"
stop_wait $REPLAY_PID || fail "replay exited $?"
grep -q "missed 0," "$TMP/replay.$REP.log" || fail "big: misses: $(tail -5 "$TMP/replay.$REP.log")"
echo "ok: $(wc -l <"$TMP/big.capture") large-request calls through the TLS proxy and the TLS replay alike"

# 3. key in its own file, client certificates required
start_replay REP "$TMP/py.zst" --tls-cert "$TMP/certs/server.crt" --tls-key "$TMP/certs/server.key" \
    --tls-ca "$CA" --summary-json "$TMP/s.json"
log=$TMP/replay.$REP.log
"$PYTHON" - "$REP" "$CA" "$TMP/certs/client.pem" <<'PY' || fail "mutual TLS"
import sys
from pymongo import MongoClient
from pymongo.errors import PyMongoError
port, ca, cert = sys.argv[1:]
uri = "mongodb://127.0.0.1:%s/?directConnection=true" % port
c = MongoClient(uri, tls=True, tlsCAFile=ca, tlsCertificateKeyFile=cert,
                serverSelectionTimeoutMS=5000)
assert c.benchmark_db.test_col.find_one({"_id": "test-doc-1"}) == {"_id": "test-doc-1", "value": 42}
c.close()
c = MongoClient(uri, tls=True, tlsCAFile=ca, serverSelectionTimeoutMS=1500)
try:
    c.benchmark_db.test_col.find_one({"_id": "test-doc-1"})
    sys.exit("served without a client certificate")
except PyMongoError as e:
    print("no client certificate: failed as expected: %s" % str(e)[:100])
PY
grep -q "TLS handshake failed: .*certificate" "$log" || fail "no log line for the missing client certificate"
stop_wait $REPLAY_PID || fail "replay exited $?"
echo "ok: --tls-key in its own file; --tls-ca requires a client certificate"
# 5. pymongo without a certificate (its monitor retries): no client
# certificate, nothing else (but a connection closed by its exit)
tls_stats "$TMP/s.json" "$ALL" "$SUMS" 't["aborted"] == 0' 't["completed"] >= 1' \
    't["failed_by"]["no_client_cert"] >= 1' \
    't["failed"] == t["failed_by"]["no_client_cert"] + t["failed_by"]["closed"]'

# 5. exact counts under --tls-ca: libmongoc with a client certificate (1
# connection), 3 Python ssl clients with one (the last TLS 1.2 only), and
# one client of each failure cause
start_replay REP "$TMP/c.zst" --tls-cert "$PEM" --tls-ca "$CA" --msg-timeout-s 1 \
    --summary-json "$TMP/s.json"
"$CWL" "mongodb://127.0.0.1:$REP/?serverSelectionTimeoutMS=5000&$TQ&tlsCertificateKeyFile=$TMP/certs/client.pem" \
    >"$TMP/c2.replay" || fail "mongoc with a client certificate"
same_lines "$TMP/c.capture" "$TMP/c2.replay"
"$PYTHON" - "$REP" "$TMP/certs" <<'PY' || fail "TLS clients"
import socket, ssl, struct, sys, time
import bson
port, d = int(sys.argv[1]), sys.argv[2]

def ctx(ca="ca.pem", cert=None, tls12=False):
    c = ssl.create_default_context(cafile=d + "/" + ca)
    if cert:
        c.load_cert_chain(d + "/" + cert)
    if tls12:
        c.maximum_version = ssl.TLSVersion.TLSv1_2
    return c

def tls(c, expect_ok):
    """One connection: handshake, then a read until the server closes."""
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(10)
    try:
        t = c.wrap_socket(s, server_hostname="127.0.0.1")
    except ssl.SSLError as e:
        assert not expect_ok, e
        s.close()
        return "refused in the handshake (%s)" % e.reason
    v = t.version()
    if expect_ok:
        t.close()
        return v
    try:  # TLS 1.3: the server's verdict on our certificate comes now
        t.recv(1)
    except (ssl.SSLError, ConnectionResetError) as e:
        return "refused at the first read (%s)" % getattr(e, "reason", e)
    finally:
        t.close()
    return "closed at the first read"

done = [tls(ctx(cert="client.pem"), True) for _ in range(2)]
done.append(tls(ctx(cert="client.pem", tls12=True), True))
assert done == ["TLSv1.3", "TLSv1.3", "TLSv1.2"], done
print("completed:", done)
# a plain MongoDB hello (OP_MSG) on the TLS port
p = socket.create_connection(("127.0.0.1", port))
body = struct.pack("<I", 0) + b"\0" + bson.BSON.encode({"hello": 1, "$db": "admin"})
p.sendall(struct.pack("<iiii", 16 + len(body), 1, 0, 2013) + body)
p.settimeout(10)
try:
    assert p.recv(100) == b"", "the plain client got an answer"
except ConnectionResetError:
    pass
p.close()
print("no client certificate:", tls(ctx(), False))
print("a certificate of another CA:", tls(ctx(cert="other_server.pem"), False))
print("replay's certificate not trusted:", tls(ctx(ca="other_ca.pem"), False))
socket.create_connection(("127.0.0.1", port)).close()  # closes at once
s = socket.create_connection(("127.0.0.1", port))  # silent: --msg-timeout-s 1
s.settimeout(10)
try:
    s.recv(1)
except ConnectionResetError:
    pass
print("plain, closing and silent clients done")
PY
stop_wait $REPLAY_PID || fail "replay exited $?"
tls_stats "$TMP/s.json" "$ALL" "$SUMS" 'd["connections"] == 10' 't["completed"] == 4' \
    't["versions"] == {"TLSv1.2": 1, "TLSv1.3": 3, "other": 0}' 't["failed"] == 6' 't["aborted"] == 0' \
    'all(t["failed_by"][k] == 1 for k in ("not_tls", "no_client_cert", "client_cert_refused", "server_cert_refused", "closed", "timeout"))' \
    't["handshake"]["p50_ms"] > 0 and t["handshake"]["p99_ms"] >= t["handshake"]["p50_ms"]'
grep -q "TLS: 4 handshakes completed (TLSv1.2 1, TLSv1.3 3; accept to completion p50 [0-9.]* p99 [0-9.]* max [0-9.]* ms), 6 failed (not TLS 1, no client certificate 1, client certificate refused 1, server certificate refused by the client 1, closed by the client 1, timed out 1)$" \
    "$TMP/replay.$REP.log" || fail "TLS summary line: $(grep 'TLS: ' "$TMP/replay.$REP.log")"
grep "TLS: " "$TMP/replay.$REP.log"

# 4. usage and unreadable files
"$MTRACE" replay --listen 127.0.0.1:0 --tls-key "$TMP/certs/server.key" "$TMP/py.zst" 2>"$TMP/u.err"
[ $? -eq 2 ] || fail "--tls-key alone: exit not 2: $(cat "$TMP/u.err")"
"$MTRACE" replay --listen 127.0.0.1:0 --tls-cert "$TMP/nope.pem" "$TMP/py.zst" 2>"$TMP/u.err"
[ $? -eq 1 ] && grep -q "nope.pem: No such file" "$TMP/u.err" && ! grep -q listening "$TMP/u.err" ||
    fail "missing certificate: $(cat "$TMP/u.err")"
"$MTRACE" replay --listen 127.0.0.1:0 --tls-cert "$TMP/certs/server.crt" "$TMP/py.zst" 2>"$TMP/u.err"
[ $? -eq 1 ] && grep -q "private key" "$TMP/u.err" || fail "certificate without key: $(cat "$TMP/u.err")"
echo "ok: usage: $(head -1 "$TMP/u.err")"
