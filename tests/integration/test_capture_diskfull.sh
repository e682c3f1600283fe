#!/usr/bin/env bash
# test_capture_diskfull.sh -- the trace cannot grow any more while the
# proxy runs (RLIMIT_FSIZE through prlimit, SIGXFSZ ignored: write() fails
# with EFBIG, as it would with ENOSPC on a full disk; no mount needed).
# Documented behaviour (docs/capture.md): one clear error line, forwarding
# goes on (the application is not broken by its observer), records after
# the failure are counted as dropped in the summary, exit status 1, and the
# trace is readable up to its last complete frame.  Runtime about 3 s.
. "$(dirname "$0")/lib.sh"

command -v prlimit >/dev/null || fail "prlimit (util-linux) is needed"
start_mock MOCK
port=$(free_port)
(
    trap '' XFSZ
    exec prlimit --fsize=60000 "$MTRACE" capture --listen 127.0.0.1:"$port" \
        --target 127.0.0.1:"$MOCK" -o "$TMP/full.zst" --threads 1
) 2>"$TMP/cap.log" &
CAP=$!
track_pid $CAP
wait_port "$port"
"$PYTHON" - "$port" <<'PY' || fail "pymongo through the proxy failed"
import os, sys, time
from pymongo import MongoClient
c = MongoClient("mongodb://127.0.0.1:%s/?directConnection=true" % sys.argv[1],
                serverSelectionTimeoutMS=5000)
col = c.benchmark_db.test_col
for _ in range(20):  # fits: these frames are complete before the limit
    assert col.find_one({"_id": "test-doc-1"})["value"] == 42
time.sleep(0.4)  # the writer closes a frame at most 100 ms after its start
# ~1.6 MB of incompressible traffic: far past the 60 kB the trace may take
for i in range(400):
    col.find_one({"_id": "test-doc-1", "pad": os.urandom(2000).hex()})
    if i % 100 == 0:
        time.sleep(0.15)  # let the writer close frames (every 100 ms)
for _ in range(20):
    assert col.find_one({"_id": "test-doc-1"})["value"] == 42
print("pymongo: 440 calls through the proxy after the trace filled up")
PY
kill -INT $CAP
wait $CAP
st=$?
cat "$TMP/cap.log"
[ $st -eq 1 ] || fail "capture exited $st, expected 1 (the trace could not be written)"
grep -q 'writing the trace failed' "$TMP/cap.log" || fail "no error line for the write failure"
grep -Eq 'File too large|No space' "$TMP/cap.log" || fail "the error does not say why"
grep -Eq 'dropped [1-9]' "$TMP/cap.log" || fail "the summary does not count the dropped records"
grep -Eq 'forwarded [0-9]{6,} bytes' "$TMP/cap.log" || fail "forwarding did not go on"
size=$(stat -c %s "$TMP/full.zst")
[ "$size" -le 60000 ] || fail "the trace grew past the limit ($size bytes)"
"$MTRACE" dump --json "$TMP/full.zst" >"$TMP/dump.json" 2>"$TMP/dump.err"
n=$(grep -c '"type":"msg"' "$TMP/dump.json")
echo "trace: $size bytes, $n messages readable; dump says: $(tail -1 "$TMP/dump.err")"
# the 20 finds before the limit (40 messages) and the handshake are in
# complete frames: all of them must be readable
[ "$n" -ge 40 ] || fail "only $n messages readable from the filled trace"
grep -q 'truncated zstd frame' "$TMP/dump.err" || fail "dump does not report the cut frame"
grep -q '"type":"conn_open"' "$TMP/dump.json" || fail "no conn_open record"
