#!/usr/bin/env bash
# test_replay_listen.sh -- --listen goes through core/addr.h (HOST:PORT and
# [V6]:PORT, HOST numeric or a name: test_capture_listen.py serves drivers
# on localhost): bad addresses are usage errors (exit 2) that say what is
# wrong; an IPv6 loopback listener ([::1]:PORT) serves pymongo the
# recorded find_one of traces/sample.zst (skipped, with a line, when the
# machine has no IPv6 loopback); --spin-us / --spin-max-us are checked, and
# the exit summary reports the loop's timer wake-ups and spin window, the
# write() times and the read lag.
. "$(dirname "$0")/lib.sh"

SAMPLE=$TOP/traces/sample.zst

# ---- usage errors: exit 2 with the reason ----
expect_usage() { # ARG_FOR_LISTEN WANTED_TEXT
    local out rc
    out=$("$MTRACE" replay --listen "$1" "$SAMPLE" 2>&1)
    rc=$?
    [ $rc -eq 2 ] || fail "--listen '$1': exit $rc (want 2): $out"
    grep -qF -- "$2" <<<"$out" || fail "--listen '$1': message lacks '$2': $out"
}
expect_usage "127.0.0.1" "HOST:PORT or [IPV6]:PORT"
expect_usage "127.0.0.1:65536" "port 0..65535"
expect_usage ":27017" "HOST:PORT"
expect_usage "no-such-host.invalid:27017" "host 'no-such-host.invalid' is not a numeric IPv4 or IPv6 address, nor a name that resolves"
expect_usage "[::1:27017" "is not a numeric"
for bad in "--spin-us x" "--spin-us -1" "--spin-max-us 0"; do
    # shellcheck disable=SC2086
    out=$("$MTRACE" replay $bad "$SAMPLE" 2>&1)
    rc=$?
    [ $rc -eq 2 ] || fail "'$bad': exit $rc (want 2): $out"
done

# ---- IPv6 loopback ----
if ! "$PYTHON" -c 'import socket; socket.socket(socket.AF_INET6).bind(("::1", 0))' 2>/dev/null; then
    echo "SKIP IPv6 part: no ::1 on this machine"
    exit 0
fi
PORT=$("$PYTHON" -c 'import socket; s=socket.socket(socket.AF_INET6); s.bind(("::1",0)); print(s.getsockname()[1])')
"$MTRACE" replay --listen "[::1]:$PORT" --threads 1 --delay-ms 0.2 --spin-us auto \
    --spin-max-us 150 --summary-json "$TMP/sum.json" "$SAMPLE" 2>"$TMP/replay.log" &
RPID=$!
track_pid $RPID
"$PYTHON" - "$PORT" <<'PY' || fail "pymongo over [::1] failed: $(cat "$TMP/replay.log")"
import socket, sys, time
port = int(sys.argv[1])
for _ in range(200):
    try:
        socket.create_connection(("::1", port), timeout=1).close()
        break
    except OSError:
        time.sleep(0.05)
import pymongo
c = pymongo.MongoClient(f"mongodb://[::1]:{port}/", serverSelectionTimeoutMS=5000)
for _ in range(20):
    doc = c.benchmark_db.test_col.find_one({"_id": "test-doc-1"})
    assert doc == {"_id": "test-doc-1", "value": 42}, doc
c.close()
PY
grep -qF "listening on [::1]:$PORT " "$TMP/replay.log" ||
    fail "the listening line should bracket the IPv6 address: $(grep listening "$TMP/replay.log")"
kill -TERM $RPID
wait $RPID || fail "replay exited $?: $(cat "$TMP/replay.log")"
grep -q 'timer wake-ups [0-9]* (lateness p50' "$TMP/replay.log" || fail "no wake-up line"
"$PYTHON" - "$TMP/sum.json" <<'PY' || fail "summary: $(cat "$TMP/sum.json")"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["matched"] >= 20 and s["missed"] == 0, s
assert s["early"] == 0, s                     # never before the deadline
assert s["achieved"]["p50_ms"] >= 0.2, s["achieved"]
w = s["wake"]
assert 0 < w["spin_us"] <= 150.0, w           # the adaptive window's bound
assert s["write"]["n"] > 0, s["write"]        # timed releases' write() times
# kernel receive time -> read(): SO_TIMESTAMPNS works on TCP since Linux 4.13
assert s["read_lag"]["n"] >= 20, s["read_lag"]
assert 0 <= s["read_lag"]["p50_ms"] < 1000, s["read_lag"]
print("wake", w, "write p50 us", s["write"]["p50_ms"] * 1e3,
      "read lag p50 us", s["read_lag"]["p50_ms"] * 1e3)
PY
echo "ok"
