#!/usr/bin/env bash
# capture_cpu_split.sh -- where the CPU of a closed-loop run goes, per
# request, through mtrace capture, HAProxy (TCP mode) or nothing: the
# client (loadgen), the upstream (fixedsrv), the proxy (and each of its
# threads), the idle time of the machine, and the context switches
# (voluntary / involuntary) of each process.  With every CPU busy,
# requests/s = CPUs / (client + upstream + proxy + idle + others, per
# request): a proxy that uses no more CPU than HAProxy and still loses
# throughput makes its peers or the idle time pay (bench_capture.sh
# table 2 only shows the proxy's own CPU).
#
#     KINDS="mtrace haproxy direct" CONNS="16" REPS=3 bash bench/capture_cpu_split.sh
#
# Env: KINDS (default "mtrace haproxy direct", run interleaved), CONNS
#      (connection counts, default "1 16 256"), REPS (default 3), SECS
#      (measured seconds per run, default 3, after a 0.5 s warm-up),
#      THREADS (mtrace --threads / HAProxy nbthread, default nproc),
#      MTRACE (default ./mtrace), MTRACE_ARGS (extra capture options),
#      MTRACE_B (kind "mtrace-b": a second mtrace binary for an A/B),
#      BUILD (helpers, default build/release).  Run it under the bench
#      lock; "idle" counts the whole machine, so anything else running
#      shows up there (and in the others' CPU, not reported).
# One line per run:
#   KIND n=CONNS rps=.. p50=.. p99=.. (us) client=.. upstream=.. proxy=.. idle=.. (us/request)
#   cs client=v/i upstream=v/i proxy=v/i (per request) threads: name=us ...
set -u
TOP=${TOP:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$TOP" || exit 1
BUILD=${BUILD:-build/release}
MTRACE=${MTRACE:-$TOP/mtrace}
KINDS=${KINDS:-mtrace haproxy direct}
CONNS=${CONNS:-1 16 256}
REPS=${REPS:-3}
SECS=${SECS:-3}
THREADS=${THREADS:-$(nproc)}
BENCH_NAME=capture_cpu_split
. "$TOP/bench/capture_env.sh"
for b in "$LOADGEN" "$FIXEDSRV" "$MTRACE"; do
    [ -x "$b" ] || die "$b not built (make bench)"
done
command -v haproxy >/dev/null || die "haproxy not installed (tools/deps.sh)"
[ -x /usr/bin/time ] || die "/usr/bin/time not installed"

HZ=$(getconf CLK_TCK)
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
csw() { cat /proc/"$1"/task/*/status | awk '/^voluntary/ { v += $2 } /^nonvoluntary/ { n += $2 } END { print v + 0, n + 0 }'; }
idle() { awk '/^cpu / { print $5 }' /proc/stat; }
thr() { for t in /proc/"$1"/task/*; do echo "${t##*/} $(awk '{ print $14 + $15 }' "$t/stat") $(tr ' ' _ <"$t/comm")"; done | sort; }
calc() { awk "BEGIN { printf \"%.2f\", $* }"; }

start_fixedsrv

# one KIND N -> one line
one() {
    local f0 f1 fc0 fc1 i0 i1 p0=0 p1=0 pc0="0 0" pc1="0 0" rps req line lu ls lw lc
    "$LOADGEN" --target 127.0.0.1:"$PROXY_PORT" --conns "$2" --duration 0.5 --warmup 0 >/dev/null ||
        die "loadgen warm-up through $1 failed"
    f0=$(ticks $FS) fc0=$(csw $FS) i0=$(idle)
    [ -n "$PROXY_PID" ] && { p0=$(ticks "$PROXY_PID"); pc0=$(csw "$PROXY_PID"); thr "$PROXY_PID" >"$TMP/th0"; }
    /usr/bin/time -f "%U %S %w %c" -o "$TMP/lg.time" "$LOADGEN" --target 127.0.0.1:"$PROXY_PORT" \
        --conns "$2" --duration "$SECS" --warmup 0 >"$TMP/lg.out" || die "loadgen through $1 failed"
    f1=$(ticks $FS) fc1=$(csw $FS) i1=$(idle)
    [ -n "$PROXY_PID" ] && { p1=$(ticks "$PROXY_PID"); pc1=$(csw "$PROXY_PID"); thr "$PROXY_PID" >"$TMP/th1"; }
    rps=$(sed -n 's/.* rps=\([0-9.]*\).*/\1/p' "$TMP/lg.out")
    req=$(calc "$rps * $SECS")
    read -r lu ls lw lc <"$TMP/lg.time"
    line="$1 n=$2 rps=$rps p50=$(sed -n 's/.* p50_us=\([0-9.]*\).*/\1/p' "$TMP/lg.out")"
    line+=" p99=$(sed -n 's/.* p99_us=\([0-9.]*\).*/\1/p' "$TMP/lg.out") client=$(calc "($lu + $ls) * 1e6 / $req")"
    line+=" upstream=$(calc "($f1 - $f0) / $HZ * 1e6 / $req")"
    [ -n "$PROXY_PID" ] && line+=" proxy=$(calc "($p1 - $p0) / $HZ * 1e6 / $req")"
    line+=" idle=$(calc "($i1 - $i0) / $HZ * 1e6 / $req")"
    set -- $fc0 $fc1
    line+=" cs client=$(calc "$lw / $req")/$(calc "$lc / $req") upstream=$(calc "($3 - $1) / $req")/$(calc "($4 - $2) / $req")"
    if [ -n "$PROXY_PID" ]; then
        set -- $pc0 $pc1
        line+=" proxy=$(calc "($3 - $1) / $req")/$(calc "($4 - $2) / $req") threads:"
        line+=$(join "$TMP/th0" "$TMP/th1" | awk -v hz="$HZ" -v r="$req" '{ printf " %s=%.2f", $3, ($4 - $2) / hz * 1e6 / r }')
    fi
    echo "$line"
}

echo "capture_cpu_split: $(nproc) cpus, $SECS s per run, $THREADS proxy threads, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "(us of CPU per request; cs = context switches per request, voluntary/involuntary)"
for n in $CONNS; do
    for ((r = 0; r < REPS; r++)); do
        for k in $KINDS; do
            # shellcheck disable=SC2086
            start_proxy "$k" ${MTRACE_ARGS:-}
            one "$k" "$n"
            stop_proxy
            rm -f "$TMP"/trace.*.zst
        done
    done
done
