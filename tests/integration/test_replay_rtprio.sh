#!/usr/bin/env bash
# test_replay_rtprio.sh -- `mtrace replay --rt-prio N` (core/sched.h):
#  - out of range or not a number: usage error, exit 2, says the range;
#  - refused (CAP_SYS_NICE dropped with setpriv, RLIMIT_RTPRIO 0): exit 1
#    with a message naming --rt-prio and what is missing, nothing left
#    listening;
#  - granted (root here and in CI): every loop thread runs under SCHED_FIFO
#    at that priority while the main thread stays normal, and pymongo
#    (sequential and 4 threads) gets the recorded find_one of
#    traces/sample.zst with --delay-ms 0.2 -- never early; the summary
#    splits the timed releases into first-of-batch and queued.
. "$(dirname "$0")/lib.sh"

SAMPLE=$TOP/traces/sample.zst

# ---- usage errors ----
for bad in 100 -1 x 1.5 ""; do
    out=$("$MTRACE" replay --rt-prio "$bad" "$SAMPLE" 2>&1)
    rc=$?
    [ $rc -eq 2 ] || fail "--rt-prio '$bad': exit $rc (want 2): $out"
    grep -qF "0..99" <<<"$out" || fail "--rt-prio '$bad': message lacks the range: $out"
done

# ---- refused: exit 1, clear reason ----
if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ] && [ "$(ulimit -r)" = 0 ]; then
    PORT=$(free_port)
    expect_refused "$PORT" "--rt-prio 1: cannot use SCHED_FIFO priority 1" "CAP_SYS_NICE" -- \
        setpriv --inh-caps=-sys_nice --bounding-set=-sys_nice \
        "$MTRACE" replay --listen 127.0.0.1:"$PORT" --threads 2 --rt-prio 1 "$SAMPLE"
else
    echo "SKIP refusal part: needs root, setpriv and ulimit -r 0"
fi

# ---- granted ----
if ! chrt -f 1 true 2>/dev/null; then
    echo "SKIP: SCHED_FIFO not permitted here (not root / no CAP_SYS_NICE)"
    exit 77
fi
PORT=$(free_port)
"$MTRACE" replay --listen 127.0.0.1:"$PORT" --threads 2 --rt-prio 3 \
    --delay-ms 0.2 --summary-json "$TMP/sum.json" "$SAMPLE" 2>"$TMP/replay.log" &
RPID=$!
track_pid $RPID
wait_listening "$TMP/replay.log" $RPID
# the listeners open before the loop threads start; the "listening" line
# comes after every thread has set its policy
for _ in $(seq 200); do
    grep -q 'listening on' "$TMP/replay.log" && break
    sleep 0.05
done
grep -q 'listening on 127.0.0.1:[0-9]* with 2 loops (SCHED_FIFO)' "$TMP/replay.log" ||
    fail "no listening line naming SCHED_FIFO: $(cat "$TMP/replay.log")"
grep -q 'real-time loops on' "$TMP/replay.log" || [ "$(nproc)" -gt 2 ] ||
    fail "2 real-time loops on $(nproc) cores: no warning: $(cat "$TMP/replay.log")"
# scheduling class and priority of every thread: main TS, the 2 loops FF 3
ps -L -o tid=,cls=,rtprio= -p $RPID >"$TMP/threads"
[ "$(awk '$2 == "FF" && $3 == 3' "$TMP/threads" | wc -l)" -eq 2 ] ||
    fail "want 2 SCHED_FIFO 3 loop threads: $(cat "$TMP/threads")"
[ "$(awk -v p=$RPID '$1 == p {print $2}' "$TMP/threads")" = TS ] ||
    fail "main thread should stay SCHED_OTHER: $(cat "$TMP/threads")"
"$PYTHON" - "$PORT" <<'PY' || fail "pymongo against --rt-prio 3: $(cat "$TMP/replay.log")"
import sys, threading
import pymongo
c = pymongo.MongoClient(f"mongodb://127.0.0.1:{sys.argv[1]}/", serverSelectionTimeoutMS=5000)
want = {"_id": "test-doc-1", "value": 42}
for _ in range(50):
    doc = c.benchmark_db.test_col.find_one({"_id": "test-doc-1"})
    assert doc == want, doc
errs = []
def work():
    try:
        for _ in range(25):
            d = c.benchmark_db.test_col.find_one({"_id": "test-doc-1"})
            assert d == want, d
    except Exception as e:  # noqa: BLE001 -- reported below
        errs.append(e)
ts = [threading.Thread(target=work) for _ in range(4)]
for t in ts:
    t.start()
for t in ts:
    t.join()
assert not errs, errs
c.close()
PY
kill -TERM $RPID
wait $RPID || fail "replay exited $?: $(cat "$TMP/replay.log")"
grep -q 'timed releases: first of their batch [0-9]*' "$TMP/replay.log" ||
    fail "no batch line in the summary: $(cat "$TMP/replay.log")"
"$PYTHON" - "$TMP/sum.json" <<'PY' || fail "summary: $(cat "$TMP/sum.json")"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["matched"] >= 150 and s["missed"] == 0, s
assert s["early"] == 0, s                        # never before the deadline
assert s["achieved"]["p50_ms"] >= 0.2, s["achieved"]
f, q = s["late_first"], s["late_queued"]
assert f["n"] > 0 and f["n"] + q["n"] <= s["achieved"]["n"], (f, q)
assert s["batch_max"] >= 1, s
assert 1 <= s["loop_conns_max"] and s["loop_conns_min"] <= s["loop_conns_max"], s
print("late p50/p99 us", s["late"]["p50_ms"] * 1e3, s["late"]["p99_ms"] * 1e3,
      "first", f["n"], "queued", q["n"], "batch max", s["batch_max"])
PY
echo "ok"
