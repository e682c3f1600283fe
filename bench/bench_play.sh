#!/usr/bin/env bash
# bench_play.sh -- mtrace play benchmarks (never part of `make test`).
#
#  1. throughput: `mtrace play --max-speed` against `mtrace replay` vs the
#     project's load generator (tests/helpers/loadgen, one thread, as play
#     runs one loop) on the same server and connection count (1, 16,
#     256).  The trace played is loadgen's own traffic recorded through
#     `mtrace capture` (one find per request, the same request loadgen
#     sends), so both send the same bytes; the rate of play is requests
#     sent / wall seconds of its whole run (its --json summary: trace
#     opened, connections and handshakes included), loadgen's its rps
#     after a 0.2 s warm-up.  Each repetition runs loadgen then play, and
#     its ratio is play / loadgen of that pair.  Target: >= 0.8x.
#  2. schedule precision: the 16-connection trace played at 1x; send
#     lateness p50 / p99 / max from play's summary (each request's send
#     against its deadline, just before the write, as replay measures its
#     achieved delays).  Target: p99 <= 100 us.  PLAY_ARGS adds arms: a
#     ';'-separated list of play option sets (e.g. "--rt-prio 1"), each
#     run after the arm without options within every repetition, so the
#     arms see the same machine state.
#  3. memory: maximum RSS (GNU time) of `play --max-speed` of a trace of
#     LARGE_MB megabytes (default 1024) written by bench/play_trace_gen.c
#     (loadgen's find, recorded replies carrying 8 KiB of incompressible
#     bytes, 64 connections open at a time, a new one after 500
#     requests).  Target: < 100 MB.
#
# Every figure is given per repetition, with the mean and its 90 %
# Student t interval.
#
#     BUILD=build/release bench/bench_play.sh [--quick]
# --quick: 0.3 s runs, 1 and 16 connections, a 2 MB trace (a smoke run).
# Env: SECS (loadgen and recording seconds, default 5), REPS (default 5),
#      LARGE_MB, PARTS (default "rate late rss": the sections to run),
#      PLAY_ARGS (section 2's extra arms, see above), REPLAY_ARGS (options
#      of the mtrace replay server of every section, e.g. "--rt-prio 1").
#      Prints markdown tables (docs/benchmarks.md keeps a run).
set -u
cd "$(dirname "$0")/.."
TOP=$PWD
BUILD=${BUILD:-build/release}
MT=$TOP/mtrace
LG=$TOP/$BUILD/helpers/loadgen
BENCH_NAME=bench_play
. bench/common.sh
SECS=${SECS:-5}
REPS=${REPS:-5}
PARTS=${PARTS:-rate late rss}
PLAY_ARGS=${PLAY_ARGS:-}
REPLAY_ARGS=${REPLAY_ARGS:-}
GEN=$TOP/$BUILD/bench/play_trace_gen
LARGE_MB=${LARGE_MB:-1024}
CONNS="1 16 256"
if [ "${1:-}" = "--quick" ]; then
    SECS=0.3 REPS=1 LARGE_MB=2 CONNS="1 16"
fi
[ -x "$LG" ] || die "$LG not built (make helpers)"
[ -x "$MT" ] || die "$MT not built (make)"
[ -x "$GEN" ] || die "$GEN not built (make bench)"
command -v /usr/bin/time >/dev/null || die "GNU time (/usr/bin/time) missing"

REP=$(free_port)
# shellcheck disable=SC2086 # REPLAY_ARGS: words on purpose
"$MT" replay --listen 127.0.0.1:$REP $REPLAY_ARGS traces/sample.zst 2>"$TMP/replay.log" &
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

# mean_ci: "mean [lo, hi]" of the numbers on stdin, the 90 % Student t
# interval of the mean (t of n-1 degrees of freedom); FORMAT the printf
# format of one number (default %.3f).
mean_ci() {
    tr ' ' '\n' | grep -v '^$' | awk -v f="${1:-%.3f}" '{ v[NR] = $1; s += $1 } END {
        n = NR; m = s / n
        split("6.314 2.920 2.353 2.132 2.015 1.943 1.895 1.860 1.833 1.812 1.796 1.782 1.771 1.761 1.753", t, " ")
        if (n < 2) { printf f " [n/a]", m; exit }
        for (i = 1; i <= n; i++) ss += (v[i] - m) ^ 2
        h = (n - 1 <= 15 ? t[n - 1] : 1.645) * sqrt(ss / (n - 1)) / sqrt(n)
        printf f " [" f ", " f "]", m, m - h, m + h }'
}
has() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }

if has rate; then
echo "## play --max-speed vs loadgen against mtrace replay ($(nproc) cpus, SECS=$SECS, REPS=$REPS)"
echo
echo "| conns | loadgen rps (median) | play rps (median) | play / loadgen per rep | mean [90 % CI] |"
echo "|---:|---:|---:|---|---|"
for c in $CONNS; do
    record_trace "$c" "$SECS" "$TMP/t$c.zst"
    lg=() pl=() ra=()
    for ((r = 0; r < REPS; r++)); do
        "$LG" --target 127.0.0.1:$REP --conns "$c" --threads 1 --duration "$SECS" --warmup 0.2 \
            >"$TMP/lg.out" || die "loadgen failed"
        l=$(grep -o 'rps=[0-9.]*' "$TMP/lg.out" | cut -d= -f2)
        "$MT" play "$TMP/t$c.zst" --target 127.0.0.1:$REP --max-speed --json >"$TMP/play.json" \
            2>"$TMP/play.err" || die "play failed: $(cat "$TMP/play.err")"
        sent=$(json_field "$TMP/play.json" sent)
        secs=$(json_field "$TMP/play.json" seconds)
        p=$(awk -v n="$sent" -v s="$secs" 'BEGIN { printf "%.0f", n / s }')
        lg+=("$l") pl+=("$p")
        ra+=("$(awk -v a="$p" -v b="$l" 'BEGIN { printf "%.3f", a / b }')")
    done
    echo "| $c | $(echo "${lg[@]}" | median) | $(echo "${pl[@]}" | median) | ${ra[*]} | $(echo "${ra[@]}" | mean_ci)x |"
done
echo
fi

if has late; then
echo "## play at 1x, 16 connections: send lateness against the schedule (us)"
echo
echo "server: mtrace replay ${REPLAY_ARGS:-(no options)}"
echo
echo "| run | play options | requests | p50 | p99 | max |"
echo "|---:|---|---:|---:|---:|---:|"
[ -s "$TMP/t16.zst" ] || record_trace 16 "$SECS" "$TMP/t16.zst"
arms=("")
if [ -n "$PLAY_ARGS" ]; then
    IFS=';' read -r -a extra <<<"$PLAY_ARGS"
    arms+=("${extra[@]}")
fi
declare -A p99s=()
us() { awk -v v="$(json_field "$TMP/play1x.json" report lateness_ms "$1")" 'BEGIN { printf "%.1f", v * 1000 }'; }
for ((r = 0; r < REPS; r++)); do
    for ((a = 0; a < ${#arms[@]}; a++)); do
        # shellcheck disable=SC2086 # an arm's options: words on purpose
        "$MT" play "$TMP/t16.zst" --target 127.0.0.1:$REP ${arms[a]} --json >"$TMP/play1x.json" \
            2>"$TMP/play.err" || die "play at 1x (${arms[a]:-no options}) failed: $(cat "$TMP/play.err")"
        p99s[$a]="${p99s[$a]:-} $(us p99)"
        echo "| $((r + 1)) | ${arms[a]:-(none)} | $(json_field "$TMP/play1x.json" report lateness_ms count) | $(us p50) | $(us p99) | $(us max) |"
    done
done
echo
for ((a = 0; a < ${#arms[@]}; a++)); do
    echo "p99 mean [90 % CI], play options ${arms[a]:-(none)}: $(echo "${p99s[$a]}" | mean_ci %.1f) us"
done
echo
fi

if has rss; then
echo "## play --max-speed of a ${LARGE_MB} MB trace: maximum RSS"
echo
big=$TMP/big.zst
"$GEN" "$big" "$LARGE_MB" >"$TMP/gen.out" || die "play_trace_gen failed"
echo "| trace MB | requests | connections | requests sent | answered | seconds | max RSS MB |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
for ((r = 0; r < (REPS < 2 ? REPS : 2); r++)); do
    /usr/bin/time -f '%M' -o "$TMP/rss" "$MT" play "$big" --target 127.0.0.1:$REP --max-speed --json \
        >"$TMP/big.json" 2>"$TMP/big.err" || die "play of the large trace failed: $(cat "$TMP/big.err")"
    echo "| $(( $(stat -c %s "$big") / 1048576 )) | $(grep -o 'requests=[0-9]*' "$TMP/gen.out" | cut -d= -f2) | $(grep -o 'connections=[0-9]*' "$TMP/gen.out" | cut -d= -f2) | $(json_field "$TMP/big.json" sent) | $(json_field "$TMP/big.json" answered) | $(json_field "$TMP/big.json" seconds) | $(awk -v k="$(tail -1 "$TMP/rss")" 'BEGIN { printf "%.1f", k / 1024 }') |"
done
fi
