#!/usr/bin/env bash
# bench_delay_floor.sh -- `mtrace capture --delay-ms 1` against the floor
# of the same job on this host: bench/delayfwd, a forwarder that only
# holds each server chunk for the delay (no framing, no recording, no
# writer thread), with mtrace's timer method (timerfd + 1 ns slack, a
# busy-poll of the last SPIN us, the clock checked after every event) and
# the same number of loops.  Same client and upstream as bench_capture.sh:
#
#   client:   $BUILD/helpers/loadgen (closed loop, one find in flight per
#             connection)
#   upstream: $BUILD/helpers/fixedsrv
#
# Per connection count (DELAY_CONNS), REPS repetitions, the kinds run one
# after the other, in reverse order in odd repetitions.  Each kind's own
# achieved delay (clock before the release's send - arrival of the
# reply's last byte: mtrace's summary line, delayfwd's exit line) and the
# client's RTT.  Reported: medians over the repetitions of each kind's
# p50 and p99, how many repetitions met the capture issue's targets (p50
# within 1.000-1.020 ms, p99 <= 1.100 ms), and per repetition mtrace's
# p99 minus the floor's (median, 95 % CI of the median).  If the floor
# misses a target on this host, no proxy that releases this way meets it
# here; if mtrace is near the floor, the gap is the host's.
#
# Env: SECS (default 3), WARM (0.5), REPS (default 5), DELAY_CONNS
#      (default "1 16"), SPIN (us, both kinds, default 100: mtrace's
#      default --spin-us), THREADS (loops, both kinds, default nproc),
#      KINDS (default "mtrace floor"; also "mtrace-rt": mtrace capture
#      --rt-prio 1, needs CAP_SYS_NICE; "mtrace1", "floor1": one loop
#      whatever THREADS says), BUILD, MTRACE.
# Every process it starts is stopped on exit; files go to a mktemp dir.
set -u
TOP=${TOP:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$TOP"
BUILD=${BUILD:-build/release}
MTRACE=${MTRACE:-$TOP/mtrace}
MTRACE_B=""
SECS=${SECS:-3}
WARM=${WARM:-0.5}
REPS=${REPS:-5}
SPIN=${SPIN:-100}
THREADS=${THREADS:-$(nproc)}
DELAY_CONNS=${DELAY_CONNS:-1 16}
KINDS=${KINDS:-mtrace floor}
PIN=0
BENCH_NAME=bench_delay_floor
. "$TOP/bench/capture_env.sh"
DELAYFWD=$BUILD/bench/delayfwd

for b in "$LOADGEN" "$FIXEDSRV" "$MTRACE" "$DELAYFWD"; do
    [ -x "$b" ] || die "$b not built (make bench)"
done
start_fixedsrv

# start KIND: the proxy in front of $UP; sets PROXY_PORT, PROXY_PID
start() {
    case $1 in
    mtrace) start_proxy mtrace --delay-ms 1 --spin-us "$SPIN" ;;
    mtrace-rt) start_proxy mtrace --delay-ms 1 --spin-us "$SPIN" --rt-prio 1 ;;
    mtrace1) start_proxy mtrace --delay-ms 1 --spin-us "$SPIN" --threads 1 ;;
    floor | floor1)
        local t=$THREADS
        [ "$1" = floor1 ] && t=1
        "$DELAYFWD" --target 127.0.0.1:$UP --delay-us 1000 --spin-us "$SPIN" \
            --threads "$t" >"$TMP/df.out" 2>"$TMP/df.err" &
        PROXY_PID=$!
        PIDS+=($PROXY_PID)
        for ((i = 0; i < 200; i++)); do grep -q READY "$TMP/df.out" && break; sleep 0.02; done
        PROXY_PORT=$(awk '/READY/ {print $2}' "$TMP/df.out")
        [ -n "$PROXY_PORT" ] || die "delayfwd did not start: $(cat "$TMP/df.err")"
        ;;
    *) die "unknown kind $1 (mtrace, mtrace-rt, mtrace1, floor, floor1)" ;;
    esac
}
# achieved KIND (after stop_proxy): sets A50 A99 (ms) from the kind's own line
achieved() {
    local line
    if [ "$1" = floor ] || [ "$1" = floor1 ]; then
        line=$(grep 'delayfwd: achieved' "$TMP/df.err")
        A50=$(sed -n 's/.* p50_us=\([0-9.]*\).*/\1/p' <<<"$line")
        A99=$(sed -n 's/.* p99_us=\([0-9.]*\).*/\1/p' <<<"$line")
        A50=$(awk "BEGIN { printf \"%.3f\", $A50 / 1000 }") A99=$(awk "BEGIN { printf \"%.3f\", $A99 / 1000 }")
    else
        line=$(grep 'delay: requested' "$TMP/mtrace.err")
        A50=$(sed -n 's/.*achieved p50 \([0-9.]*\) ms.*/\1/p' <<<"$line")
        A99=$(sed -n 's/.*, p99 \([0-9.]*\) ms.*/\1/p' <<<"$line")
    fi
    [ -n "$A50" ] && [ -n "$A99" ] || die "$1: no achieved-delay line"
    echo "  $1 own achieved p50 $A50 ms, p99 $A99 ms" >&2
}

echo "mtrace capture --delay-ms 1 vs the floor (bench/delayfwd), loopback, $(nproc) cpus, $THREADS loops each," \
    "--spin-us $SPIN, $SECS s per run (+ $WARM s warm-up), $REPS repetition(s), interleaved"
echo "date: $(date -u +%FT%TZ); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

declare -A P50S P99S C50S C99S RPSS
for n in $DELAY_CONNS; do
    for k in $KINDS; do P50S[$n,$k]="" P99S[$n,$k]="" C50S[$n,$k]="" C99S[$n,$k]="" RPSS[$n,$k]=""; done
    for ((r = 0; r < REPS; r++)); do
        order=$KINDS
        ((r % 2)) && order=$(tr ' ' '\n' <<<"$KINDS" | tac | tr '\n' ' ')
        for k in $order; do
            start "$k"
            run "$k" "$n"
            stop_proxy # leaves mtrace.err / df.err for achieved
            achieved "$k"
            P50S[$n,$k]+=" $A50" P99S[$n,$k]+=" $A99" C50S[$n,$k]+=" $P50" C99S[$n,$k]+=" $P99" RPSS[$n,$k]+=" $RPS"
        done
    done
done
echo

med() { awk -v fmt="$1" '{ printf fmt, $1 }' < <(median); }
# met LIST LO HI: how many numbers of LIST lie in [LO, HI]
met() { tr ' ' '\n' <<<"$1" | grep -v '^$' | awk -v lo="$2" -v hi="$3" '$1 >= lo && $1 <= hi { m++ } END { print m + 0 }'; }
pairs() { paste <(tr ' ' '\n' <<<"$1" | grep -v '^$') <(tr ' ' '\n' <<<"$2" | grep -v '^$'); }

echo "## own achieved delay (ms; medians of $REPS; met: repetitions within the target: p50 1.000-1.020, p99 <= 1.100)"
echo "## client: loadgen's RTT p50 / p99 (us, medians), requests/s (median)"
printf "| %5s | %-9s | %7s | %7s | %15s | %7s | %7s | %8s | %8s | %8s |\n" conns kind p50 p99 "p99 95% CI" \
    "p50 met" "p99 met" "RTT p50" "RTT p99" "req/s"
printf "|-------|-----------|---------|---------|-----------------|---------|---------|----------|----------|----------|\n"
for n in $DELAY_CONNS; do
    for k in $KINDS; do
        printf "| %5s | %-9s | %7s | %7s | %15s | %7s | %7s | %8s | %8s | %8s |\n" "$n" "$k" \
            "$(med %.3f <<<"${P50S[$n,$k]}")" "$(med %.3f <<<"${P99S[$n,$k]}")" \
            "$(median_ci "%.3f-%.3f" <<<"${P99S[$n,$k]}")" \
            "$(met "${P50S[$n,$k]}" 1.000 1.020)/$REPS" "$(met "${P99S[$n,$k]}" 0 1.100)/$REPS" \
            "$(med %.1f <<<"${C50S[$n,$k]}")" "$(med %.1f <<<"${C99S[$n,$k]}")" "$(med %.0f <<<"${RPSS[$n,$k]}")"
    done
done
echo
if [[ " $KINDS " == *" mtrace "* && " $KINDS " == *" floor "* ]]; then
    echo "mtrace - floor, own achieved, per repetition (us; median, 95% CI of the median; n/a below 6):"
    for n in $DELAY_CONNS; do
        for q in p50 p99; do
            if [ $q = p50 ]; then d=$(pairs "${P50S[$n,mtrace]}" "${P50S[$n,floor]}" | awk '{ printf " %.0f", ($1 - $2) * 1000 }')
            else d=$(pairs "${P99S[$n,mtrace]}" "${P99S[$n,floor]}" | awk '{ printf " %.0f", ($1 - $2) * 1000 }'); fi
            echo "  $n conns $q: $(med %.0f <<<"$d") ($(median_ci "%.0f to %.0f" <<<"$d"));$d"
        done
    done
    echo
fi
echo "per repetition, own achieved p99 (ms):"
for n in $DELAY_CONNS; do
    for k in $KINDS; do echo "  $n $k:${P99S[$n,$k]}"; done
done
