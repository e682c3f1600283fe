#!/usr/bin/env bash
# test_play_rtprio.sh -- `mtrace play --rt-prio N` and `--cpu-dma-latency
# US` (core/sched.h, core/pmqos.h, the same code as replay's):
#  - out of range or not a number: one usage line naming the range, exit 2;
#  - --rt-prio refused (CAP_SYS_NICE dropped with setpriv, RLIMIT_RTPRIO
#    0): exit 1 with a line naming --rt-prio and what is missing, no -o
#    trace created;
#  - granted (root here and in CI): while a trace of 16 inserts of 1 MiB,
#    0.2 s apart (pymongo through `mtrace capture` to MockupDB), plays at
#    1x against MockupDB, play's loop (its main thread) and its trace
#    reader (alive: the trace is more than its 8 MiB queue) run under
#    SCHED_FIFO at that priority and the -o trace's writer thread under
#    SCHED_OTHER; every request answered;
#  - --cpu-dma-latency refused (run as nobody): exit 1, one line naming
#    the option and the device;
#  - --cpu-dma-latency held: the kernel's bound is at most the request
#    while play runs and the request is gone after exit.  The request is
#    machine-wide and other work on this host may be measuring, so the
#    test holds a bound no usual idle state exceeds (~2 s, as
#    test_replay_pmqos.sh does; the code path is the same for every value).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replay_lib.sh"

SAMPLE=$TOP/traces/sample.zst
PMQOS_US=1999997
DEV=/dev/cpu_dma_latency
# the device holds a raw native s32
dev_read() { "$PYTHON" -c 'import struct,sys; print(struct.unpack("i", open(sys.argv[1], "rb").read(4))[0])' "$DEV"; }

# ---- usage errors: one line, exit 2 ----
for bad in 100 -1 x 1.5 ""; do
    out=$("$MTRACE" play "$SAMPLE" --target 127.0.0.1:1 --rt-prio "$bad" 2>&1)
    rc=$?
    [ $rc -eq 2 ] || fail "--rt-prio '$bad': exit $rc (want 2): $out"
    [ "$(wc -l <<<"$out")" -eq 1 ] || fail "--rt-prio '$bad': not one line: $out"
    grep -qF "bad --rt-prio '$bad' (0..99" <<<"$out" || fail "--rt-prio '$bad': message lacks the range: $out"
    grep -qF "run 'mtrace play --help'" <<<"$out" || fail "--rt-prio '$bad': no pointer to --help: $out"
done
for bad in -1 x 2000000001 1e3 ""; do
    out=$("$MTRACE" play "$SAMPLE" --target 127.0.0.1:1 --cpu-dma-latency "$bad" 2>&1)
    rc=$?
    [ $rc -eq 2 ] || fail "--cpu-dma-latency '$bad': exit $rc (want 2): $out"
    [ "$(wc -l <<<"$out")" -eq 1 ] || fail "--cpu-dma-latency '$bad': not one line: $out"
    grep -qF "bad --cpu-dma-latency '$bad' (0..2000000000 microseconds)" <<<"$out" ||
        fail "--cpu-dma-latency '$bad': message lacks the range: $out"
done
out=$("$MTRACE" play --help)
for o in --rt-prio --cpu-dma-latency; do
    grep -q -- "^  $o " <<<"$out" || fail "play --help lacks $o"
done

start_mock PORT

# ---- refused: exit 1, clear reason, nothing written ----
if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ] && [ "$(ulimit -r)" = 0 ]; then
    out=$(setpriv --inh-caps=-sys_nice --bounding-set=-sys_nice \
        "$MTRACE" play "$SAMPLE" --target 127.0.0.1:"$PORT" --rt-prio 1 -o "$TMP/refused.zst" 2>&1)
    rc=$?
    [ $rc -eq 1 ] || fail "--rt-prio 1 without CAP_SYS_NICE: exit $rc (want 1): $out"
    [ "$(wc -l <<<"$out")" -eq 1 ] || fail "refusal not one line: $out"
    grep -qF "mtrace play: --rt-prio 1: cannot use SCHED_FIFO priority 1" <<<"$out" ||
        fail "refusal does not name --rt-prio: $out"
    grep -qF "CAP_SYS_NICE" <<<"$out" || fail "refusal does not say what is missing: $out"
    [ ! -e "$TMP/refused.zst" ] || fail "a refused play created its -o trace"
else
    echo "SKIP refusal part: needs root, setpriv and ulimit -r 0"
fi
if [ -e "$DEV" ] && command -v setpriv >/dev/null && [ "$(id -u)" = 0 ]; then
    out=$(setpriv --reuid=65534 --regid=65534 --clear-groups \
        "$MTRACE" play "$SAMPLE" --target 127.0.0.1:"$PORT" --cpu-dma-latency 0 2>&1)
    rc=$?
    [ $rc -eq 1 ] || fail "--cpu-dma-latency 0 as nobody: exit $rc (want 1): $out"
    [ "$(wc -l <<<"$out")" -eq 1 ] || fail "refusal not one line: $out"
    grep -qF "mtrace play: --cpu-dma-latency 0: cannot open $DEV" <<<"$out" ||
        fail "refusal does not name the option and the device: $out"
else
    echo "SKIP --cpu-dma-latency refusal: needs $DEV, root and setpriv"
fi

# ---- granted ----
if ! chrt -f 1 true 2>/dev/null; then
    echo "SKIP: SCHED_FIFO not permitted here (not root / no CAP_SYS_NICE)"
    exit 77
fi
dma=()
[ -w "$DEV" ] && dma=(--cpu-dma-latency "$PMQOS_US")
start_capture CAP "$PORT" "$TMP/big.zst"
"$PYTHON" - "$CAP" <<'PY' || fail "pymongo through capture failed"
import os, sys, time
import pymongo
c = pymongo.MongoClient(f"mongodb://127.0.0.1:{sys.argv[1]}/", serverSelectionTimeoutMS=5000)
for i in range(16):
    c.benchmark_db.big.insert_one({"_id": i, "b": os.urandom(1 << 20)})
    time.sleep(0.2)
c.close()
PY
stop_wait $CAPTURE_PID || fail "capture exited $?: $(cat "$TMP/big.zst.log")"
"$MTRACE" play "$TMP/big.zst" --target 127.0.0.1:"$PORT" --rt-prio 3 "${dma[@]}" \
    -o "$TMP/out.zst" --json >"$TMP/play.json" 2>"$TMP/play.err" &
PPID_=$!
track_pid $PPID_
# main (the loop), the reader and the writer thread; a TSan build's runtime
# adds a background thread of its own, under SCHED_OTHER
tsan=0
[ "${MT_SANITIZE:-}" = tsan ] && tsan=1
for _ in $(seq 100); do
    [ "$(ls /proc/$PPID_/task 2>/dev/null | wc -l)" -ge $((3 + tsan)) ] && break
    sleep 0.02
done
ps -L -o tid=,cls=,rtprio= -p $PPID_ >"$TMP/threads"
if [ ${#dma[@]} -gt 0 ]; then
    now=$(dev_read)
    [ "$now" -le "$PMQOS_US" ] || fail "kernel bound $now us while play holds $PMQOS_US"
fi
wait $PPID_ || fail "play --rt-prio 3 exited $?: $(cat "$TMP/play.err")"
[ "$(wc -l <"$TMP/threads")" -eq $((3 + tsan)) ] ||
    fail "want $((3 + tsan)) threads (loop, reader, writer$([ $tsan = 1 ] && echo ", TSan's")): $(cat "$TMP/threads")"
[ "$(awk -v p=$PPID_ '$1 == p {print $2, $3}' "$TMP/threads")" = "FF 3" ] ||
    fail "the loop (main thread) is not SCHED_FIFO 3: $(cat "$TMP/threads")"
[ "$(awk '$2 == "FF" && $3 == 3' "$TMP/threads" | wc -l)" -eq 2 ] ||
    fail "want the loop and the reader under SCHED_FIFO 3: $(cat "$TMP/threads")"
[ "$(awk '$2 == "TS"' "$TMP/threads" | wc -l)" -eq $((1 + tsan)) ] ||
    fail "want the writer thread under SCHED_OTHER: $(cat "$TMP/threads")"
grep -q 'event loop and trace reader under SCHED_FIFO 3' "$TMP/play.err" ||
    fail "no line naming SCHED_FIFO: $(cat "$TMP/play.err")"
"$PYTHON" - "$TMP/play.json" <<'PY' || fail "summary: $(cat "$TMP/play.json")"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["sent"] >= 16 and s["answered"] == s["sent"] and not s["failed"], s
PY
"$MTRACE" stats "$TMP/out.zst" >/dev/null || fail "the -o trace of play --rt-prio 3 is unreadable"
if [ ${#dma[@]} -gt 0 ]; then
    after=$(dev_read)
    [ "$after" != "$PMQOS_US" ] || fail "request still held after exit ($after us)"
    grep -q "holding a CPU wake-up latency request of $PMQOS_US us" "$TMP/play.err" ||
        fail "no holding line: $(cat "$TMP/play.err")"
else
    echo "SKIP --cpu-dma-latency held part: $DEV not writable here"
fi
echo "ok"
