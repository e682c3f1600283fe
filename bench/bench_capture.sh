#!/usr/bin/env bash
# bench_capture.sh -- the recording proxy side by side with HAProxy (TCP
# mode) and socat, on loopback, same client and same upstream:
#
#   client:   $BUILD/helpers/loadgen (closed loop, one find in flight per
#             connection, OP_MSG)
#   upstream: $BUILD/helpers/fixedsrv (answers each find with a fixed reply)
#
# 1. added latency, 1 connection: p50/p99 through each proxy minus direct
# 2. throughput with 1, 16, 256 connections: mtrace capture vs HAProxy,
#    and each proxy's CPU time per request (utime + stime of the proxy
#    process over the loadgen run, warm-up included, divided by
#    rps x (SECS + WARM)): on a shared machine ops/s swing with what else
#    runs, CPU per request much less
#    (a row "16 rt" adds mtrace capture --rt-prio 1 at 16 connections).
#    Within a repetition the proxies run one after the other, in reverse
#    order in odd repetitions (the first of a pair tends to win on a VM).
#    2b: per repetition, the row's requests/s over HAProxy's in the same
#    repetition: median, min-max, how many repetitions the row won (ratio
#    > 1), and how many it won of those where it ran first (order bias).
# 3. --delay-ms 1 with 1 and 16 connections: added delay = RTT with the
#    delay minus the p50 RTT of the same proxy without it (p50 and p99),
#    plus the proxy's own achieved-delay figures from its summary; with
#    normal scheduling (spin 100, auto) and --rt-prio 1 (spin 0, 50, 100,
#    auto), interleaved, REPS times, medians (DELAY_CONFIGS overrides).
#
# Env: SECS (seconds per measurement, default 3), WARM (default 0.5),
#      THREADS (mtrace/haproxy threads, default: nproc), REPS (tables 2
#      and 3: runs per cell, interleaved, medians reported; default 1),
#      DELAY_CONFIGS (table 3: "RT:SPIN ..." pairs), DELAY_CONNS (table 3's
#      connection counts, default "1 16"), T2_CONNS (table 2's, default
#      "1 16 256"), TABLES (which of
#      1 2 3 to run, default "1 2 3"), BUILD, MTRACE,
#      MTRACE_B (table 2: a second mtrace binary, row "N b", run
#      interleaved with $MTRACE in the same repetitions: an A/B of two
#      builds under the same conditions), RT16 (0: no "16 rt" row),
#      PMQOS (1: hold a PM QoS CPU wake-up latency request of 0 us on
#      /dev/cpu_dma_latency for the WHOLE invocation, so direct, mtrace,
#      HAProxy and socat all run under it, as `mtrace capture
#      --cpu-dma-latency 0` would; needs root; default 0: not held, the
#      header says what the host's bound is).  The request is global: hold
#      it only when nothing else on the host is being measured.
#      PIN (1: mtrace capture --pin-loops and HAProxy cpu-map, one thread
#      per CPU for both; default 0; see bench/capture_env.sh).
# Every process it starts is stopped on exit; files go to a mktemp dir.
set -u
TOP=${TOP:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$TOP"
BUILD=${BUILD:-build/release}
MTRACE=${MTRACE:-$TOP/mtrace}
MTRACE_B=${MTRACE_B:-}
RT16=${RT16:-1}
SECS=${SECS:-3}
WARM=${WARM:-0.5}
THREADS=${THREADS:-$(nproc)}
REPS=${REPS:-1}
BENCH_NAME=bench_capture
. "$TOP/bench/capture_env.sh"

for b in "$LOADGEN" "$FIXEDSRV" "$MTRACE" ${MTRACE_B:+"$MTRACE_B"}; do
    [ -x "$b" ] || die "$b not built (make bench)"
done
command -v haproxy >/dev/null || die "haproxy not installed (tools/deps.sh)"
command -v socat >/dev/null || die "socat not installed (tools/deps.sh)"

PMQOS=${PMQOS:-0}
case $PMQOS in
0) ;;
1)
    [ -w /dev/cpu_dma_latency ] || die "PMQOS=1: /dev/cpu_dma_latency not writable (needs root)"
    # held until this holder exits (the cleanup trap kills it)
    /usr/bin/python3 -c 'import os, struct, sys, time
fd = os.open("/dev/cpu_dma_latency", os.O_WRONLY)
os.write(fd, struct.pack("i", 0))
print("HELD", flush=True)
time.sleep(1e6)' >"$TMP/pmqos.out" &
    PIDS+=($!)
    for ((i = 0; i < 100; i++)); do grep -q HELD "$TMP/pmqos.out" && break; sleep 0.02; done
    grep -q HELD "$TMP/pmqos.out" || die "PMQOS=1: could not hold /dev/cpu_dma_latency"
    ;;
*) die "PMQOS wants 0 or 1, not '$PMQOS'" ;;
esac
pmqos_now() {
    /usr/bin/python3 -c 'import struct; print(struct.unpack("i", open("/dev/cpu_dma_latency", "rb").read(4))[0])' 2>/dev/null || echo "?"
}

start_fixedsrv

TABLES=${TABLES:-1 2 3}
want_table() { [[ " $TABLES " == *" $1 "* ]]; }
calc() { awk "BEGIN { printf \"%.1f\", $* }"; }

echo "mtrace capture vs HAProxy $(haproxy -v | awk 'NR==1 {print $3}') vs socat," \
    "loopback, $(nproc) cpus, $SECS s per run, $THREADS proxy threads"
if [ "$PMQOS" = 1 ]; then
    echo "PM QoS: a CPU wake-up latency request of 0 us held on /dev/cpu_dma_latency for the" \
        "whole run (every row; host bound now $(pmqos_now) us)"
else
    echo "PM QoS: no request held by the benchmark (host bound now $(pmqos_now) us)"
fi
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
[ "$PIN" = 1 ] && echo "PIN=1: mtrace capture --pin-loops, HAProxy cpu-map auto:1/1-$THREADS 0-$((THREADS - 1)) (one thread per CPU, both)"
[ -n "$MTRACE_B" ] && echo "rows \"N\": $MTRACE; rows \"N b\": $MTRACE_B (interleaved)"
echo
if want_table 1; then
    echo "## 1. added latency, 1 connection (us; added = proxy - direct)"
    declare -A L50 L99
    for kind in direct mtrace haproxy socat; do
        start_proxy $kind
        run "$kind" 1
        L50[$kind]=$P50 L99[$kind]=$P99
        stop_proxy
    done
    printf "| %-15s | %8s | %8s | %10s | %10s |\n" proxy p50 p99 "added p50" "added p99"
    printf "|-----------------|----------|----------|------------|------------|\n"
    for kind in direct mtrace haproxy socat; do
        printf "| %-15s | %8s | %8s | %10s | %10s |\n" "$kind" "${L50[$kind]}" "${L99[$kind]}" \
            "$(calc "${L50[$kind]} - ${L50[direct]}")" "$(calc "${L99[$kind]} - ${L99[direct]}")"
    done
    echo
fi
if want_table 2; then
    echo "## 2. throughput (requests/s, closed loop; CPU = proxy's CPU us per request; median of $REPS run(s))"
    echo "(rt = mtrace capture --rt-prio 1, the loops under SCHED_FIFO; 16 connections only)"
    printf "| %-8s | %10s | %10s | %10s | %14s | %10s | %11s |\n" conns direct mtrace haproxy "mtrace/haproxy" \
        "mtrace CPU" "haproxy CPU"
    printf "|----------|------------|------------|------------|----------------|------------|-------------|\n"
    declare -A PR PF PKINDS
    for n in ${T2_CONNS:-1 16 256}; do
        declare -A T C
        kinds="direct mtrace haproxy"
        [ -n "$MTRACE_B" ] && kinds="direct mtrace mtrace-b haproxy"
        [ "$n" = 16 ] && [ "$RT16" = 1 ] && kinds="${kinds% haproxy} mtrace-rt haproxy"
        for kind in $kinds; do T[$kind]="" C[$kind]="" PR[$n,$kind]="" PF[$n,$kind]=""; done
        for ((r = 0; r < REPS; r++)); do
            # whoever runs first in a pair tends to win on a VM (9 of 10
            # pairs in one A/B): odd repetitions run the proxies in reverse order
            order=$kinds
            ((r % 2)) && order=$(tr ' ' '\n' <<<"$kinds" | tac | tr '\n' ' ')
            declare -A RR=() POS=()
            pos=0
            for kind in $order; do
                if [ "$kind" = mtrace-rt ]; then start_proxy mtrace --rt-prio 1; else start_proxy $kind; fi
                run "$kind" "$n"
                T[$kind]+=" $RPS" C[$kind]+=" $CPU" RR[$kind]=$RPS POS[$kind]=$pos
                pos=$((pos + 1))
                stop_proxy
            done
            for kind in $kinds; do
                case $kind in direct | haproxy) continue ;; esac
                PR[$n,$kind]+=" $(awk "BEGIN { printf \"%.3f\", ${RR[$kind]} / ${RR[haproxy]} }")"
                # 1: this row ran before HAProxy in this repetition
                PF[$n,$kind]+=" $((POS[$kind] < POS[haproxy] ? 1 : 0))"
            done
        done
        for kind in $kinds; do
            T[$kind]=$(median <<<"${T[$kind]}")
            [ "$kind" != direct ] && C[$kind]=$(median <<<"${C[$kind]}")
        done
        PKINDS[$n]=$kinds
        for kind in $kinds; do
            case $kind in direct | haproxy) continue ;; esac
            label=$n
            [ "$kind" = mtrace-rt ] && label="$n rt"
            [ "$kind" = mtrace-b ] && label="$n b"
            printf "| %-8s | %10s | %10s | %10s | %14s | %10s | %11s |\n" "$label" "${T[direct]}" \
                "${T[$kind]}" "${T[haproxy]}" \
                "$(awk "BEGIN { printf \"%.2fx\", ${T[$kind]} / ${T[haproxy]} }")" \
                "${C[$kind]}" "${C[haproxy]}"
        done
    done
    echo
    echo "### 2b. per repetition: requests/s of the row / HAProxy's in the same repetition"
    echo "(won: ratio > 1; first: repetitions where the row ran before HAProxy, and how many of those it won;"
    echo " 95% CI: distribution-free confidence interval of the median ratio, order statistics"
    echo " x(k), x(n+1-k) with k the largest such that P(Binomial(n, 1/2) < k) <= 0.025; n/a below 6 repetitions)"
    printf "| %-8s | %8s | %15s | %13s | %9s | %11s | %s\n" row median "95% CI" min-max won "won first" ratios
    printf "|----------|----------|-----------------|---------------|-----------|-------------|--------\n"
    for n in ${T2_CONNS:-1 16 256}; do
        for kind in ${PKINDS[$n]}; do
            case $kind in direct | haproxy) continue ;; esac
            label=$n
            [ "$kind" = mtrace-rt ] && label="$n rt"
            [ "$kind" = mtrace-b ] && label="$n b"
            read -r won first wonfirst lo hi < <(paste <(tr ' ' '\n' <<<"${PR[$n,$kind]}" | grep -v '^$') \
                <(tr ' ' '\n' <<<"${PF[$n,$kind]}" | grep -v '^$') |
                awk 'NR == 1 { lo = $1; hi = $1 } { w += ($1 > 1); f += $2; wf += ($2 && $1 > 1)
                     if ($1 < lo) lo = $1; if ($1 > hi) hi = $1 } END { print w + 0, f + 0, wf + 0, lo, hi }')
            printf "| %-8s | %7.3fx | %15s | %5.3f-%5.3fx | %4s of %-2s | %4s of %-4s |%s\n" "$label" \
                "$(median <<<"${PR[$n,$kind]}")" "$(median_ci <<<"${PR[$n,$kind]}")" "$lo" "$hi" \
                "$won" "$REPS" "$wonfirst" "$first" "${PR[$n,$kind]}"
        done
    done
    echo
fi
if want_table 3; then
    # Table 3's configurations: "rt spin": rt is 0 (normal scheduling) or the
    # --rt-prio; spin is the --spin-us.  DELAY_CONFIGS overrides the list.
    DELAY_CONFIGS=${DELAY_CONFIGS:-"0:100 0:auto 1:0 1:50 1:100 1:auto"}
    echo "## 3. --delay-ms 1 (us; added = RTT with delay - p50 RTT without; spin = --spin-us; rt = --rt-prio, 0: normal scheduling; medians of $REPS interleaved run(s))"
    printf "| %5s | %2s | %5s | %10s | %10s | %10s | %10s | %-44s | %10s |\n" conns rt spin "p50 base" "p50" \
        "added p50" "added p99" "mtrace's own achieved (p50 / p99 / max, ms)" "CPU us/req"
    printf "|-------|----|-------|------------|------------|------------|------------|----------------------------------------------|------------|\n"
    for n in ${DELAY_CONNS:-1 16}; do
        declare -A D50 D99 O50 O99 OMX DC
        for cfg in $DELAY_CONFIGS; do D50[$cfg]="" D99[$cfg]="" O50[$cfg]="" O99[$cfg]="" OMX[$cfg]="" DC[$cfg]=""; done
        bases=""
        for ((r = 0; r < REPS; r++)); do
            start_proxy mtrace
            run "mtrace-nodelay" "$n"
            bases+=" $P50"
            stop_proxy
            for cfg in $DELAY_CONFIGS; do
                rt=${cfg%%:*} spin=${cfg#*:}
                start_proxy mtrace --delay-ms 1 --spin-us "$spin" --rt-prio "$rt"
                run "mtrace-delay1-rt$rt-spin$spin" "$n"
                stop_proxy
                read -r o50 o99 omx < <(sed -n 's/.*achieved p50 \([0-9.]*\) ms, p99 \([0-9.]*\) ms, max \([0-9.]*\) ms.*/\1 \2 \3/p' \
                    "$TMP/mtrace.err")
                D50[$cfg]+=" $P50" D99[$cfg]+=" $P99" DC[$cfg]+=" $CPU"
                O50[$cfg]+=" $o50" O99[$cfg]+=" $o99" OMX[$cfg]+=" $omx"
            done
        done
        base=$(median <<<"$bases")
        for cfg in $DELAY_CONFIGS; do
            rt=${cfg%%:*} spin=${cfg#*:}
            p50=$(median <<<"${D50[$cfg]}") p99=$(median <<<"${D99[$cfg]}")
            own="$(median <<<"${O50[$cfg]}") / $(median <<<"${O99[$cfg]}") / $(median <<<"${OMX[$cfg]}")"
            printf "| %5s | %2s | %5s | %10s | %10s | %10s | %10s | %-44s | %10s |\n" "$n" "$rt" "$spin" "$base" \
                "$p50" "$(calc "$p50 - $base")" "$(calc "$p99 - $base")" "$own" "$(median <<<"${DC[$cfg]}")"
        done
    done
fi
