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

# 1. pymongo, sequential and threaded, and 2. a plain client in between
start_replay REP "$TMP/py.zst" --tls-cert "$PEM" --msg-timeout-s 1
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

start_replay REP "$TMP/pyt.zst" --tls-cert "$PEM" --threads 2
"$PYTHON" "$PYWL" "mongodb://127.0.0.1:$REP/?$TQ" --threads 10 --miss >"$TMP/pyt.replay" || fail "threaded pymongo over TLS"
check_replay pyt '"call": "miss"'
stop_wait $REPLAY_PID || fail "replay exited $?"

# Node.js driver
start_replay REP "$TMP/node.zst" --tls-cert "$PEM"
node "$NODEWL" "mongodb://127.0.0.1:$REP/?$TQ" --miss >"$TMP/node.replay" || fail "node over TLS failed"
grep -v '"call":"miss"' "$TMP/node.replay" >"$TMP/node.hits"
same_lines "$TMP/node.capture" "$TMP/node.hits"
grep -q '"call":"miss","error":47' "$TMP/node.replay" || fail "node: miss not 47"
echo "ok: node over TLS: $(wc -l <"$TMP/node.capture") calls identical to the recording, miss reported"
stop_wait $REPLAY_PID || fail "replay exited $?"

# libmongoc
start_replay REP "$TMP/c.zst" --tls-cert "$PEM"
"$CWL" "mongodb://127.0.0.1:$REP/?serverSelectionTimeoutMS=5000&$TQ" --miss >"$TMP/c.replay" ||
    fail "mongoc over TLS failed"
check_replay c '"call": "miss"'
stop_wait $REPLAY_PID || fail "replay exited $?"

# requests of several MB (8 MiB, 3 x 15 MiB near maxMessageSizeBytes, 4
# MiB): recorded through a TLS capture proxy (TLS client -> plain mock),
# replayed by a TLS replay; pymongo gets the same answers both times
CPORT=$(free_port)
"$MTRACE" capture --listen 127.0.0.1:"$CPORT" --target 127.0.0.1:"$MOCK" --tls-cert "$PEM" \
    -o "$TMP/big.zst" 2>"$TMP/big.log" &
CAPTURE_PID=$!
track_pid $CAPTURE_PID
wait_port "$CPORT"
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
    --tls-ca "$CA"
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

# 4. usage and unreadable files
"$MTRACE" replay --listen 127.0.0.1:0 --tls-key "$TMP/certs/server.key" "$TMP/py.zst" 2>"$TMP/u.err"
[ $? -eq 2 ] || fail "--tls-key alone: exit not 2: $(cat "$TMP/u.err")"
"$MTRACE" replay --listen 127.0.0.1:0 --tls-cert "$TMP/nope.pem" "$TMP/py.zst" 2>"$TMP/u.err"
[ $? -eq 1 ] && grep -q "nope.pem: No such file" "$TMP/u.err" && ! grep -q listening "$TMP/u.err" ||
    fail "missing certificate: $(cat "$TMP/u.err")"
"$MTRACE" replay --listen 127.0.0.1:0 --tls-cert "$TMP/certs/server.crt" "$TMP/py.zst" 2>"$TMP/u.err"
[ $? -eq 1 ] && grep -q "private key" "$TMP/u.err" || fail "certificate without key: $(cat "$TMP/u.err")"
echo "ok: usage: $(head -1 "$TMP/u.err")"
