# shellcheck shell=bash
# common.sh -- sourced by the benchmark scripts (bench/capture_env.sh for
# bench_capture.sh and capture_cpu_split.sh, and bench_replay.sh; not run
# on its own, not named bench_* so that bench/run.sh does not run it): the
# temp dir and the trap that stops every process in PIDS and removes it,
# die, free_port, wait_port, median and median_ci.  The caller sets BENCH_NAME (for messages)
# and may set WAIT_PORT_TRIES (20 ms each, default 200: 4 s).
TMP=$(mktemp -d /tmp/mtrace-bench.XXXXXX)
PIDS=()

cleanup() {
    for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null; done
    for p in "${PIDS[@]:-}"; do [ -n "$p" ] && wait "$p" 2>/dev/null; done
    rm -rf "$TMP"
}
trap cleanup EXIT
die() { echo "$BENCH_NAME: $*" >&2; exit 1; }

free_port() {
    /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}
wait_port() {
    for ((i = 0; i < ${WAIT_PORT_TRIES:-200}; i++)); do
        (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0
        sleep 0.02
    done
    die "nothing listening on $1"
}

# median of the numbers on stdin (one per line or space-separated)
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# median_ci [FORMAT]: the 95 % distribution-free confidence interval of the
# median of the numbers on stdin (one per line or space-separated): the
# order statistics x(k) and x(n+1-k), k the largest with
# P(Bin(n, 1/2) <= k-1) <= 0.025 (coverage >= 95 %; e.g. n = 15:
# x(4)-x(12), n = 31: x(10)-x(22)); "n/a" below 6 numbers.  FORMAT: the
# printf format of the two bounds (default "%.3f-%.3fx", for ratios).
median_ci() {
    tr ' ' '\n' | grep -v '^$' | sort -g | awk -v fmt="${1:-%.3f-%.3fx}" '{ v[NR] = $1 } END {
        n = NR; t = 0.5 ^ n; c = 0; k = 0
        for (i = 0; i <= n; i++) { c += t; if (c > 0.025) break; k = i + 1; t = t * (n - i) / (i + 1) }
        if (k < 1) print "n/a"; else printf fmt, v[k], v[n + 1 - k] }'
}
