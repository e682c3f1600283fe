#!/usr/bin/env bash
# test_replay_delay.sh -- --delay-ms 1 adds about 1 ms to what a sequential
# pymongo client sees, compared with --delay-ms 0 (direction and rough size
# only: precision is measured in bench/bench_replay.sh), and no reply is
# released before its deadline.  The two servers run side by side and the
# client alternates between them, so other load on the machine affects both
# alike.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replay_lib.sh"

start_mock MOCK
start_capture CAP "$MOCK" "$TMP/d.zst"
"$PYTHON" "$TOP/tests/integration/replay_latency.py" 3 "mongodb://127.0.0.1:$CAP/" >/dev/null ||
    fail "workload through capture failed"
stop_wait $CAPTURE_PID || fail "capture exited $?"

start_replay REP0 "$TMP/d.zst" --delay-ms 0 --threads 1 --summary-json "$TMP/sum0.json"
PID0=$REPLAY_PID
start_replay REP1 "$TMP/d.zst" --delay-ms 1 --threads 1 --summary-json "$TMP/sum1.json"
PID1=$REPLAY_PID
"$PYTHON" "$TOP/tests/integration/replay_latency.py" 400 "mongodb://127.0.0.1:$REP0/" \
    "mongodb://127.0.0.1:$REP1/" >"$TMP/lat.json" || fail "workload against replay failed"
sed -n 1p "$TMP/lat.json" >"$TMP/lat0.json"
sed -n 2p "$TMP/lat.json" >"$TMP/lat1.json"
for d in 0 1; do
    pid=$PID0
    [ $d = 1 ] && pid=$PID1
    stop_wait $pid || fail "replay exited $?"
    echo "delay $d: client $(cat "$TMP/lat$d.json"); server $(cut -c1-400 "$TMP/sum$d.json")"
done
"$PYTHON" - "$TMP" <<'PY' || fail "delay check failed"
import json, sys
d = sys.argv[1]
l0, l1 = (json.load(open(f"{d}/lat{i}.json")) for i in (0, 1))
s0, s1 = (json.load(open(f"{d}/sum{i}.json")) for i in (0, 1))
rise = l1["p50_ms"] - l0["p50_ms"]
print(f"p50 rise {rise:.3f} ms (mean rise {l1['mean_ms'] - l0['mean_ms']:.3f} ms)")
assert 0.7 < rise < 2.0, f"--delay-ms 1 raised the client's p50 by {rise:.3f} ms"
assert s1["early"] == 0 and s0["early"] == 0, "a reply left before its deadline"
assert s1["achieved"]["p50_ms"] >= 1.0, s1["achieved"]
assert s1["requested"]["p50_ms"] == 1.0, s1["requested"]
assert s1["missed"] == 0 and s1["matched"] >= 400, s1
PY
