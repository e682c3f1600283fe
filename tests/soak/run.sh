#!/usr/bin/env bash
# tests/soak/run.sh -- long load runs (`make soak`; never part of make test).
#
#   A. replay: 10 000 concurrent connections for REPLAY_SECS (default 30):
#      LOAD_CONNS (9 000) closed-loop find clients (tests/helpers/loadgen)
#      plus HELLO_CONNS (1 000) connections in awaitable hello
#      (tests/soak/hello_hold.py) against a trace captured from
#      mockmongo.py --topology-version with pymongo.  Checks: loadgen
#      errors = 0, replay requests = served, missed = 0, hello sent =
#      received, every connection held; reports replay VmHWM.
#   B. capture proxy: CAP_CONNS (1 000) loadgen connections through
#      `mtrace capture` to tests/helpers/fixedsrv for DURATION s (default
#      60).  Checks: loadgen errors = 0; messages in the trace = messages
#      in the proxy's summary (c2s + s2c, records lost = 0); recorded bytes
#      = forwarded bytes; every timed request is in the trace; reports the
#      proxy's VmHWM.
#
# Env: DURATION, REPLAY_SECS, LOAD_CONNS, HELLO_CONNS, CAP_CONNS, SOAK_ONLY
# (replay|capture).  Prints "soak: PASS" / "soak: FAIL" and the figures;
# exit status 0 when every check held.
set -u
cd "$(dirname "$0")/../.."
TOP=$PWD
BUILD=${BUILD:-build/release}
MTRACE=$TOP/mtrace
PYTHON=/usr/bin/python3
DURATION=${DURATION:-60}
REPLAY_SECS=${REPLAY_SECS:-30}
LOAD_CONNS=${LOAD_CONNS:-9000}
HELLO_CONNS=${HELLO_CONNS:-1000}
CAP_CONNS=${CAP_CONNS:-1000}
SOAK_ONLY=${SOAK_ONLY:-}
TMP=$(mktemp -d /tmp/mtrace-soak.XXXXXX)
PIDS=()
failed=0

cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
    rm -rf "$TMP"
}
trap cleanup EXIT

ulimit -n "$(ulimit -Hn)" || true
want=$((LOAD_CONNS + HELLO_CONNS + 200))
if [ "$(ulimit -n)" -lt "$want" ]; then
    echo "soak: open-files limit $(ulimit -n) < $want; raise the hard limit" >&2
    exit 1
fi

check() { # check COND-STATUS MESSAGE
    if [ "$1" -ne 0 ]; then
        echo "soak: CHECK FAILED: $2"
        failed=1
    else
        echo "soak: ok: $2"
    fi
}

hwm_kb() { awk '/^VmHWM:/ {print $2}' "/proc/$1/status" 2>/dev/null; }
field() { sed -n "s/.*[ ]$1=\([0-9.]*\).*/\1/p" "$2" | head -1; }

start_logged() { # start_logged LOG CMD... ; sets STARTED_PID
    "${@:2}" >"$1" 2>&1 &
    STARTED_PID=$!
    PIDS+=("$STARTED_PID")
}

wait_line() { # wait_line FILE REGEX SECS
    local i
    for ((i = 0; i < $3 * 10; i++)); do
        grep -Eq "$2" "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

# ---- A. replay: 10 000 connections, 1 000 in awaitable hello ----
soak_replay() {
    local mock cap rep port hwm req srv mis lreq lerr
    start_logged "$TMP/mock.log" "$PYTHON" tests/integration/mockmongo.py \
        --port 0 --topology-version
    wait_line "$TMP/mock.log" '^READY' 10 || { check 1 "mockmongo started"; return; }
    mock=$(sed -n 's/^READY //p' "$TMP/mock.log")
    start_logged "$TMP/cap.log" "$MTRACE" capture --listen 127.0.0.1:0 \
        --target "127.0.0.1:$mock" -o "$TMP/tv.zst"
    cap=$STARTED_PID
    wait_line "$TMP/cap.log" 'listening on' 10 || { check 1 "capture started"; return; }
    port=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$TMP/cap.log")
    "$PYTHON" - "$port" <<'PY'
import sys, time
from pymongo import MongoClient
c = MongoClient("mongodb://127.0.0.1:%s/?directConnection=true" % sys.argv[1],
                heartbeatFrequencyMS=500)
col = c.benchmark_db.test_col
for _ in range(20):
    assert col.find_one({"_id": "test-doc-1"})["value"] == 42
time.sleep(1.5)  # the monitor's awaitable hellos
c.close()
PY
    check $? "pymongo workload captured (topologyVersion trace)"
    kill -INT "$cap"; wait "$cap"
    "$MTRACE" dump --json "$TMP/tv.zst" | grep -q topologyVersion
    check $? "the trace holds a hello with topologyVersion"

    start_logged "$TMP/rep.log" "$MTRACE" replay --listen 127.0.0.1:0 \
        --threads 2 --max-conns $((LOAD_CONNS + HELLO_CONNS + 100)) \
        --summary-json "$TMP/rep.json" "$TMP/tv.zst"
    rep=$STARTED_PID
    wait_line "$TMP/rep.log" 'listening on' 20 || { check 1 "replay started"; return; }
    port=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$TMP/rep.log" | head -1)
    "$PYTHON" tests/soak/hello_hold.py "$port" "$HELLO_CONNS" "$REPLAY_SECS" 5000 \
        >"$TMP/hello.out" 2>&1 &
    local hp=$!
    PIDS+=("$hp")
    sleep 2
    # the most connections open at once: sockets among the replay's fds
    (
        peak=0
        while kill -0 "$rep" 2>/dev/null; do
            n=$(find "/proc/$rep/fd" -lname 'socket:*' 2>/dev/null | wc -l)
            [ "$n" -gt "$peak" ] && { peak=$n; echo "$peak" >"$TMP/peak_socks"; }
            sleep 1
        done
    ) &
    PIDS+=("$!")
    "$BUILD/helpers/loadgen" --target "127.0.0.1:$port" --conns "$LOAD_CONNS" \
        --threads 2 --duration "$REPLAY_SECS" --warmup 1 --hello \
        --label replay_load >"$TMP/load.out" 2>&1
    check $? "loadgen with $LOAD_CONNS connections ran"
    wait "$hp"
    check $? "awaitable hello: $(cat "$TMP/hello.out")"
    hwm=$(hwm_kb "$rep")
    kill -INT "$rep"; wait "$rep"
    cat "$TMP/load.out"
    grep 'mtrace replay:' "$TMP/rep.log"
    lreq=$(field requests "$TMP/load.out"); lerr=$(field errors "$TMP/load.out")
    req=$(jq .requests "$TMP/rep.json"); srv=$(jq .served "$TMP/rep.json")
    mis=$(jq .missed "$TMP/rep.json")
    [ "${lerr:-1}" = 0 ]; check $? "loadgen errors = ${lerr:-?} (requests timed ${lreq:-?})"
    [ "$req" = "$srv" ] && [ "$mis" = 0 ]
    check $? "replay requests $req = served $srv, missed $mis"
    local peak
    peak=$(cat "$TMP/peak_socks" 2>/dev/null || echo 0)
    # sockets = client connections + listeners (one per loop)
    [ "$peak" -ge $((LOAD_CONNS + HELLO_CONNS)) ]
    check $? "replay held $peak sockets at once (>= $((LOAD_CONNS + HELLO_CONNS)) connections)"
    echo "soak: figure: replay $((LOAD_CONNS + HELLO_CONNS)) connections" \
        "(peak $peak sockets open at once)" \
        "($HELLO_CONNS awaitable hello), ${REPLAY_SECS}s: VmHWM ${hwm} kB," \
        "requests $req = served $srv, loadgen rps $(field rps "$TMP/load.out")"
}

# ---- B. capture proxy: 1 000 connections for DURATION s ----
soak_capture() {
    local up cap port hwm lreq lerr c2s s2c inrec
    start_logged "$TMP/fixed.log" "$BUILD/helpers/fixedsrv" --threads 1
    wait_line "$TMP/fixed.log" '^READY' 10 || { check 1 "fixedsrv started"; return; }
    up=$(sed -n 's/^READY //p' "$TMP/fixed.log")
    start_logged "$TMP/pcap.log" "$MTRACE" capture --listen 127.0.0.1:0 \
        --target "127.0.0.1:$up" -o "$TMP/load.zst" --threads 1
    cap=$STARTED_PID
    wait_line "$TMP/pcap.log" 'listening on' 10 || { check 1 "capture started"; return; }
    port=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$TMP/pcap.log")
    "$BUILD/helpers/loadgen" --target "127.0.0.1:$port" --conns "$CAP_CONNS" \
        --threads 1 --duration "$DURATION" --warmup 0 \
        --label capture_load >"$TMP/cload.out" 2>&1
    check $? "loadgen with $CAP_CONNS connections through the proxy ran"
    sleep 1
    hwm=$(hwm_kb "$cap")
    kill -INT "$cap"; wait "$cap"
    check $? "capture exited 0"
    cat "$TMP/cload.out"
    cat "$TMP/pcap.log"
    lreq=$(field requests "$TMP/cload.out"); lerr=$(field errors "$TMP/cload.out")
    c2s=$(sed -n 's/.*client->server: \([0-9]*\) messages.*/\1/p' "$TMP/pcap.log")
    s2c=$(sed -n 's/.*server->client: \([0-9]*\) messages.*/\1/p' "$TMP/pcap.log")
    inrec=$("$MTRACE" dump --json "$TMP/load.zst" | grep -c '"type":"msg"')
    [ "${lerr:-1}" = 0 ]; check $? "loadgen errors = ${lerr:-?}"
    [ "$inrec" = $((c2s + s2c)) ]
    check $? "messages in the trace $inrec = proxy messages $c2s + $s2c (records lost 0)"
    [ "$c2s" -ge "${lreq:-0}" ] && [ "$s2c" -ge "${lreq:-0}" ]
    check $? "every timed request ($lreq) and its reply recorded ($c2s/$s2c)"
    [ $((c2s - s2c)) -le "$CAP_CONNS" ] && [ "$c2s" -ge "$s2c" ]
    check $? "unanswered at stop $((c2s - s2c)) <= one per connection"
    grep -q 'recorded [0-9]* bytes = forwarded' "$TMP/pcap.log"
    check $? "recorded bytes = forwarded bytes"
    echo "soak: figure: capture proxy $CAP_CONNS connections, ${DURATION}s:" \
        "VmHWM ${hwm} kB, $c2s requests + $s2c replies recorded," \
        "trace msgs $inrec, loadgen rps $(field rps "$TMP/cload.out")"
}

[ "$SOAK_ONLY" = capture ] || soak_replay
[ "$SOAK_ONLY" = replay ] || soak_capture
if [ $failed -eq 0 ]; then echo "soak: PASS"; else echo "soak: FAIL"; fi
exit $failed
