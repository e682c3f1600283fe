#!/usr/bin/env bash
# test_replay_balance.sh -- connections are spread evenly over the loops:
# SO_REUSEPORT picks a loop by a hash of the addresses (64 connections
# came out anywhere from 32/32 to 24/40), and a loop that accepts while
# another holds fewer hands the connection over (core/srv.c).  64
# clients connect one after the other to `--threads 2`, each gets its
# OP_MSG ping answered; the exit summary must say 32..32 connections per
# loop (without the hand-off, a 32/32 split has about 1 chance in 10).
. "$(dirname "$0")/lib.sh"

SAMPLE=$TOP/traces/sample.zst
PORT=$(free_port)
"$MTRACE" replay --listen 127.0.0.1:"$PORT" --threads 2 \
    --summary-json "$TMP/sum.json" "$SAMPLE" 2>"$TMP/replay.log" &
RPID=$!
track_pid $RPID
# wait for the log line, not with a probe connection (it would count)
for _ in $(seq 200); do
    grep -q 'listening on' "$TMP/replay.log" && break
    sleep 0.05
done
grep -q 'listening on' "$TMP/replay.log" || fail "replay did not start: $(cat "$TMP/replay.log")"
"$PYTHON" - "$PORT" <<'PY' || fail "64 clients: $(cat "$TMP/replay.log")"
import socket, struct, sys
import bson

port = int(sys.argv[1])
body = bson.BSON.encode({"ping": 1, "$db": "admin"})
msg = struct.pack("<iiiiI", 16 + 4 + 1 + len(body), 1, 0, 2013, 0) + b"\0" + body

def reply(s):
    head = b""
    while len(head) < 16:
        b = s.recv(16 - len(head))
        assert b, "server closed"
        head += b
    n = struct.unpack("<i", head[:4])[0]
    rest = b""
    while len(rest) < n - 16:
        b = s.recv(n - 16 - len(rest))
        assert b, "server closed"
        rest += b
    assert struct.unpack("<i", head[12:16])[0] == 2013, head
    doc = bson.BSON(rest[5:]).decode()
    assert doc.get("ok") == 1.0, doc

socks = []
for i in range(64):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(msg)
    reply(s)  # answered before the next one connects
    socks.append(s)
for s in socks:
    s.sendall(msg)
    reply(s)
for s in socks:
    s.close()
PY
kill -TERM $RPID
wait $RPID || fail "replay exited $?: $(cat "$TMP/replay.log")"
grep -q 'connections per loop 32..32' "$TMP/replay.log" ||
    fail "connections not balanced: $(grep 'connections per loop' "$TMP/replay.log")"
"$PYTHON" - "$TMP/sum.json" <<'PY' || fail "summary: $(cat "$TMP/sum.json")"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["connections"] == 64 and s["served"] == 128, s
assert (s["loop_conns_min"], s["loop_conns_max"]) == (32, 32), s
PY
echo "ok"
