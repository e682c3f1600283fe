#!/usr/bin/env bash
# bench_play.sh -- mtrace play benchmarks (never part of `make test`).
#
#  1. throughput: `mtrace play --max-speed` against `mtrace replay` vs the
#     project's load generator (tests/helpers/loadgen) on the same server
#     and connection count (1, 16, 256).  The trace played is loadgen's own
#     traffic recorded through `mtrace capture` (one find per request, the
#     same request loadgen sends), so both send the same bytes; the rate of
#     play is requests sent / wall seconds of its run (its --json summary),
#     loadgen's its rps.  Target: play >= 0.8x loadgen.
#  2. schedule precision: the 16-connection trace played at 1x; send
#     lateness p50 / p99 / max from play's summary (each request's write
#     against its deadline, the loop's timer heap with the adaptive spin
#     window, as replay measures its delays).  Target: p99 <= 100 us.
#  3. memory: maximum RSS (GNU time) of `play --max-speed` of a trace of
#     LARGE_MB megabytes (default 1024), built by recording loadgen at 16
#     connections until the file is that big.  Target: < 100 MB.
#
#     BUILD=build/release bench/bench_play.sh [--quick]
# --quick: 0.3 s runs, 1 and 16 connections, a 2 MB trace (a smoke run).
# Env: SECS (loadgen and recording seconds, default 5), REPS (default 3),
#      LARGE_MB.  Prints markdown tables (docs/benchmarks.md keeps a run).
set -u
cd "$(dirname "$0")/.."
TOP=$PWD
BUILD=${BUILD:-build/release}
MT=$TOP/mtrace
LG=$TOP/$BUILD/helpers/loadgen
BENCH_NAME=bench_play
. bench/common.sh
SECS=${SECS:-5}
REPS=${REPS:-3}
LARGE_MB=${LARGE_MB:-1024}
CONNS="1 16 256"
if [ "${1:-}" = "--quick" ]; then
    SECS=0.3 REPS=1 LARGE_MB=2 CONNS="1 16"
fi
[ -x "$LG" ] || die "$LG not built (make helpers)"
[ -x "$MT" ] || die "$MT not built (make)"
command -v /usr/bin/time >/dev/null || die "GNU time (/usr/bin/time) missing"

REP=$(free_port)
"$MT" replay --listen 127.0.0.1:$REP traces/sample.zst 2>"$TMP/replay.log" &
PIDS+=($!)
wait_port $REP

# record_trace CONNS SECS OUT: loadgen through a capture proxy into OUT
record_trace() {
    local cap pid
    cap=$(free_port)
    "$MT" capture --listen 127.0.0.1:$cap --target 127.0.0.1:$REP -o "$3" --force 2>"$3.log" &
    pid=$!
    wait_port $cap
    "$LG" --target 127.0.0.1:$cap --conns "$1" --threads 1 --duration "$2" --warmup 0 --hello \
        >"$3.lg" || die "loadgen through capture failed"
    kill -INT $pid
    wait $pid
}

json_field() { # FILE KEY... : a number from play's --json summary
    /usr/bin/python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
for k in sys.argv[2:]:
    d = d[k]
print(d)' "$@"
}

echo "## play --max-speed vs loadgen against mtrace replay ($(nproc) cpus, SECS=$SECS, REPS=$REPS)"
echo
echo "| conns | loadgen rps | play rps | play / loadgen |"
echo "|---:|---:|---:|---:|"
for c in $CONNS; do
    record_trace "$c" "$SECS" "$TMP/t$c.zst"
    lg=() pl=()
    for ((r = 0; r < REPS; r++)); do
        "$LG" --target 127.0.0.1:$REP --conns "$c" --threads 1 --duration "$SECS" --warmup 0.2 \
            >"$TMP/lg.out" || die "loadgen failed"
        lg+=("$(grep -o 'rps=[0-9.]*' "$TMP/lg.out" | cut -d= -f2)")
        "$MT" play "$TMP/t$c.zst" --target 127.0.0.1:$REP --max-speed --json >"$TMP/play.json" \
            2>"$TMP/play.err" || die "play failed: $(cat "$TMP/play.err")"
        sent=$(json_field "$TMP/play.json" sent)
        secs=$(json_field "$TMP/play.json" seconds)
        pl+=("$(awk -v n="$sent" -v s="$secs" 'BEGIN { printf "%.0f", n / s }')")
    done
    mlg=$(echo "${lg[@]}" | median)
    mpl=$(echo "${pl[@]}" | median)
    echo "| $c | $mlg | $mpl | $(awk -v a="$mpl" -v b="$mlg" 'BEGIN { printf "%.2fx", a / b }') |"
done

echo
echo "## play at 1x, 16 connections: send lateness against the schedule (us)"
echo
echo "| run | requests | p50 | p99 | max |"
echo "|---:|---:|---:|---:|---:|"
[ -s "$TMP/t16.zst" ] || record_trace 16 "$SECS" "$TMP/t16.zst"
for ((r = 0; r < REPS; r++)); do
    "$MT" play "$TMP/t16.zst" --target 127.0.0.1:$REP --json >"$TMP/play1x.json" \
        2>"$TMP/play.err" || die "play at 1x failed: $(cat "$TMP/play.err")"
    us() { awk -v v="$(json_field "$TMP/play1x.json" report lateness_ms "$1")" 'BEGIN { printf "%.1f", v * 1000 }'; }
    echo "| $((r + 1)) | $(json_field "$TMP/play1x.json" report lateness_ms count) | $(us p50) | $(us p99) | $(us max) |"
done

echo
echo "## play --max-speed of a ${LARGE_MB} MB trace: maximum RSS"
echo
big=$TMP/big.zst
cap=$(free_port)
"$MT" capture --listen 127.0.0.1:$cap --target 127.0.0.1:$REP -o "$big" 2>"$big.log" &
cpid=$!
wait_port $cap
"$LG" --target 127.0.0.1:$cap --conns 16 --threads 1 --duration 86400 --warmup 0 >/dev/null &
lpid=$!
while [ "$(stat -c %s "$big" 2>/dev/null || echo 0)" -lt $((LARGE_MB * 1024 * 1024)) ]; do
    kill -0 $lpid 2>/dev/null || die "loadgen stopped while the large trace was recorded"
    sleep 1
done
kill $lpid; wait $lpid 2>/dev/null
kill -INT $cpid; wait $cpid
/usr/bin/time -f '%M' -o "$TMP/rss" "$MT" play "$big" --target 127.0.0.1:$REP --max-speed --json \
    >"$TMP/big.json" 2>"$TMP/big.err" || die "play of the large trace failed: $(cat "$TMP/big.err")"
echo "| trace MB | requests sent | seconds | max RSS MB |"
echo "|---:|---:|---:|---:|"
echo "| $(( $(stat -c %s "$big") / 1048576 )) | $(json_field "$TMP/big.json" sent) | $(json_field "$TMP/big.json" seconds) | $(awk -v k="$(tail -1 "$TMP/rss")" 'BEGIN { printf "%.1f", k / 1024 }') |"
