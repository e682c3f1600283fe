# shellcheck shell=bash
# common.sh -- sourced by the benchmark scripts (bench/capture_env.sh for
# bench_capture.sh and capture_cpu_split.sh, and bench_replay.sh; not run
# on its own, not named bench_* so that bench/run.sh does not run it): the
# temp dir and the trap that stops every process in PIDS and removes it,
# die, free_port and wait_port.  The caller sets BENCH_NAME (for messages)
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
