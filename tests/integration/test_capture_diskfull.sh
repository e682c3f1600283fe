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
wait_listening "$TMP/cap.log" $CAP capture
"$PYTHON" "$TOP/tests/integration/fill_workload.py" "$port" ||
    fail "pymongo through the proxy failed"
kill -INT $CAP
wait $CAP
st=$?
cat "$TMP/cap.log"
[ $st -eq 1 ] || fail "capture exited $st, expected 1 (the trace could not be written)"
full_trace_verdict "$TMP/cap.log" "$TMP/full.zst" 'File too large|No space'
size=$(stat -c %s "$TMP/full.zst")
[ "$size" -le 60000 ] || fail "the trace grew past the limit ($size bytes)"
grep -q 'truncated zstd frame' "$TMP/full.err" || fail "dump does not report the cut frame"
