# lib.sh -- helpers for integration tests written in bash.  Source it.
#   free_port            print a free 127.0.0.1 TCP port
#   wait_listening LOG PID [WHAT]  until LOG (an mtrace server's stderr) says
#                        "listening on": the one readiness check of the
#                        harnesses (a probe connection would be recorded
#                        or counted as a connection of the test's own)
#   start_mock VAR [ARGS]  start mockmongo.py; sets VAR to its port, remembers pid
#   capture_tv_trace OUT.zst  record a trace whose hellos carry topologyVersion
#                        (pymongo's replay_monitor.py through `mtrace capture`
#                        to mockmongo.py --topology-version); needs replay_lib.sh
#   cleanup              kills everything started with track_pid (trap EXIT)
#   fail MSG             print MSG and exit 1
#   expect_refused PORT TEXT... -- CMD...
#                        CMD (a server told to listen on 127.0.0.1:PORT) must
#                        exit 1 within 10 s, print every TEXT, print no
#                        "listening" line and leave nothing listening on PORT
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

# wait_listening LOG PID [WHAT]: until LOG says "listening on" (capture and
# replay say so after listen(), so the port is ready).  10 s; fails if PID
# exits first.  WHAT names the server in the failure (default "replay").
wait_listening() {
    local i what=${3:-replay}
    for ((i = 0; i < 500; i++)); do
        grep -q "listening on" "$1" 2>/dev/null && return 0
        kill -0 "$2" 2>/dev/null || fail "$what exited before listening: $(cat "$1")"
        sleep 0.02
    done
    fail "$what did not say it listens after 10 s: $(cat "$1")"
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

# capture_tv_trace OUT.zst: a trace for the streaming (awaitable / exhaust)
# hello: MockupDB with topologyVersion, recorded from pymongo (MockupDB
# rejects the Node.js driver's exhaustAllowed).  Uses start_capture and
# stop_wait of replay_lib.sh; the mock serves until the test ends.
capture_tv_trace() {
    local out=$1 mock cap
    start_mock mock --topology-version
    start_capture cap "$mock" "$out"
    "$PYTHON" "$TOP/tests/integration/replay_monitor.py" "mongodb://127.0.0.1:$cap/" 0.2 >/dev/null ||
        fail "pymongo through capture failed"
    stop_wait "$CAPTURE_PID" || fail "capture exited $?"
}

# expect_refused PORT TEXT... -- CMD...: a server that must refuse to start.
# Sets REFUSED_OUT to what CMD printed (stdout and stderr).
expect_refused() {
    local port=$1 rc w
    local -a want=()
    shift
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do
        want+=("$1")
        shift
    done
    [ $# -gt 1 ] || fail "expect_refused: no command after --"
    shift
    REFUSED_OUT=$(timeout 10 "$@" 2>&1)
    rc=$?
    [ $rc -eq 1 ] || fail "$*: exit $rc (want 1): $REFUSED_OUT"
    for w in "${want[@]}"; do
        grep -qF -- "$w" <<<"$REFUSED_OUT" || fail "$*: message lacks '$w': $REFUSED_OUT"
    done
    if grep -q "listening" <<<"$REFUSED_OUT"; then
        fail "$*: listened before the refusal: $REFUSED_OUT"
    fi
    if (exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null; then
        fail "$*: something listens on $port after the refusal"
    fi
}

# full_trace_verdict LOG TRACE WHY: what a capture proxy whose trace ran out
# of room (test_capture_diskfull.sh, test_fault_enospc.sh; fill_workload.py's
# traffic) must have said and kept, its exit status checked by the caller:
# the write failure and WHY (an ERE) in its log, forwarding on, the records
# after the failure counted as dropped, and the trace readable up to its
# last complete frame: the 20 finds before the limit (40 messages) and the
# connection's open record.  Sets FULL_MSGS to the readable messages.
full_trace_verdict() {
    local log=$1 trace=$2 why=$3
    grep -q 'writing the trace failed' "$log" || fail "no error line for the write failure"
    grep -Eq "$why" "$log" || fail "the error does not say why ($why)"
    grep -Eq 'dropped [1-9]' "$log" || fail "the summary does not count the dropped records"
    grep -Eq 'forwarded [0-9]{6,} bytes' "$log" || fail "forwarding did not go on"
    "$MTRACE" dump --json "$trace" >"$TMP/full.json" 2>"$TMP/full.err"
    FULL_MSGS=$(grep -c '"type":"msg"' "$TMP/full.json")
    echo "trace: $(stat -c %s "$trace") bytes, $FULL_MSGS messages readable; dump: $(tail -1 "$TMP/full.err")"
    [ "$FULL_MSGS" -ge 40 ] || fail "only $FULL_MSGS messages readable from the trace"
    grep -q '"type":"conn_open"' "$TMP/full.json" || fail "no conn_open record"
}
