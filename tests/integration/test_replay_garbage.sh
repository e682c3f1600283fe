#!/usr/bin/env bash
# test_replay_garbage.sh -- clients sending garbage (a bad header, a length
# over maxMessageSizeBytes, an OP_MSG with broken BSON), or half a message
# then closing: each such connection is closed with a log line, and a
# pymongo client connected all along keeps getting its answers.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replay_lib.sh"

start_mock MOCK
start_capture CAP "$MOCK" "$TMP/g.zst"
"$PYTHON" "$TOP/tests/integration/replay_latency.py" 2 "mongodb://127.0.0.1:$CAP/" >/dev/null ||
    fail "workload through capture failed"
stop_wait $CAPTURE_PID || fail "capture exited $?"

start_replay REP "$TMP/g.zst" --threads 1
"$PYTHON" - "$REP" <<'PY' || fail "garbage run failed"
import socket, struct, sys, time
from pymongo import MongoClient
port = int(sys.argv[1])
client = MongoClient(f"mongodb://127.0.0.1:{port}/", serverSelectionTimeoutMS=5000)
col = client.benchmark_db.test_col
assert col.find_one({"_id": "test-doc-1"})["value"] == 42

def hdr(length, opcode=2013):
    return struct.pack("<iiii", length, 7, 0, opcode)

def closed_by_server(payload, half_close=False):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(payload)
    if half_close:
        s.close()
        return True
    s.settimeout(5)
    try:
        return s.recv(100) == b""
    except ConnectionResetError:
        return True
    finally:
        s.close()

# 1: not a MongoDB message at all
assert closed_by_server(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
# 2: a length over maxMessageSizeBytes
assert closed_by_server(hdr(0x7FFFFFF0) + b"\0" * 8)
# 3: OP_MSG whose body's BSON length lies
body = struct.pack("<i", 200) + b"\x10a\0\1\0\0\0\0"
assert closed_by_server(hdr(16 + 4 + 1 + len(body)) + b"\0\0\0\0" + b"\0" + body)
# 4: half a valid message, then close
msg = hdr(16 + 4 + 1 + 17) + b"\0\0\0\0\0" + struct.pack("<i", 17) + b"\x10ping\0\1\0\0\0\0" + b"\0" * 5
closed_by_server(msg[:20], half_close=True)
time.sleep(0.2)
# the pymongo connection was there all along and still works
for _ in range(20):
    assert col.find_one({"_id": "test-doc-1"})["value"] == 42
client.close()
print("garbage clients closed; pymongo unaffected")
PY
stop_wait $REPLAY_PID || fail "replay exited $?"
log=$TMP/replay.$REP.log
cat "$log"
n=$(grep -c 'closed: bad input' "$log")
[ "$n" -ge 3 ] || fail "expected 3 'closed: bad input' lines, saw $n"
grep -q 'closed: peer closed mid-message' "$log" || fail "no mid-message close line"
grep -q 'bad input 3' "$log" || fail "summary does not count 3 bad inputs"
