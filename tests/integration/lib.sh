# lib.sh -- helpers for integration tests written in bash.  Source it.
#   free_port            print a free 127.0.0.1 TCP port
#   wait_port PORT [S]   wait until something listens on PORT (default 10 s)
#   start_mock VAR [ARGS]  start mockmongo.py; sets VAR to its port, remembers pid
#   cleanup              kills everything started with track_pid (trap EXIT)
#   fail MSG             print MSG and exit 1
set -u
: "${TOP:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
: "${MTRACE:=$TOP/mtrace}"
: "${PYTHON:=/usr/bin/python3}"
TMP=$(mktemp -d /tmp/mtrace-test.XXXXXX)
PIDS=()

track_pid() { PIDS+=("$1"); }

cleanup() {
    for p in "${PIDS[@]:-}"; do
        [ -n "$p" ] && kill "$p" 2>/dev/null
    done
    for p in "${PIDS[@]:-}"; do
        [ -n "$p" ] && wait "$p" 2>/dev/null
    done
    rm -rf "$TMP"
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

free_port() {
    "$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

wait_port() {
    local port=$1 secs=${2:-10} i
    for ((i = 0; i < secs * 20; i++)); do
        if (exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null; then return 0; fi
        sleep 0.05
    done
    fail "nothing listening on port $port after ${secs}s"
}

# start_mock VARNAME [mockmongo args...]
start_mock() {
    local var=$1; shift
    local out=$TMP/mock.$RANDOM
    "$PYTHON" "$TOP/tests/integration/mockmongo.py" "$@" >"$out" 2>"$out.err" &
    track_pid $!
    local i
    for ((i = 0; i < 200; i++)); do
        if grep -q READY "$out" 2>/dev/null; then
            printf -v "$var" '%s' "$(awk '/READY/ {print $2}' "$out")"
            return 0
        fi
        sleep 0.05
    done
    cat "$out.err" >&2
    fail "mockmongo did not start"
}
