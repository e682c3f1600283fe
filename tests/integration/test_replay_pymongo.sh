#!/usr/bin/env bash
# test_replay_pymongo.sh -- pymongo, sequential and 10 threads: the workload
# against MockupDB through `mtrace capture`, then against `mtrace replay`
# of that trace, must return the same documents and the same errors
# (cursors of several batches, killCursors, inserts, an unacknowledged w:0
# insert that gets no reply, an error reply), and a
# query that no trace holds gets the documented miss error (code 47).
# Every connection of the trace carries messages: the harness waits for
# the proxy's "listening on" line, never with a connection of its own.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replay_lib.sh"
WL=$TOP/tests/integration/replay_workload.py

start_mock MOCK
for mode in seq threads; do
    args=()
    [ $mode = threads ] && args=(--threads 10)
    start_capture CAP "$MOCK" "$TMP/$mode.zst"
    "$PYTHON" "$WL" "mongodb://127.0.0.1:$CAP/" "${args[@]}" >"$TMP/$mode.capture" ||
        fail "$mode workload failed through capture"
    stop_wait $CAPTURE_PID || fail "capture exited $?"
    [ -s "$TMP/$mode.zst" ] || fail "no trace written"
    "$MTRACE" dump --json "$TMP/$mode.zst" >"$TMP/$mode.json" || fail "dump of the $mode trace"
    nconn=$(jq -s '[.[] | select(.type == "conn_open")] | length' "$TMP/$mode.json")
    nused=$(jq -s '[.[] | select(.type == "msg") | .conn] | unique | length' "$TMP/$mode.json")
    [ "$nconn" -ge 2 ] && [ "$nconn" = "$nused" ] ||
        fail "$mode: $nconn connections recorded, $nused with messages (an empty one: a probe?)"

    start_replay REP "$TMP/$mode.zst" --strict --threads 2
    "$PYTHON" "$WL" "mongodb://127.0.0.1:$REP/" "${args[@]}" --miss >"$TMP/$mode.replay" ||
        fail "$mode workload failed against replay"
    grep -v '"call": "miss"' "$TMP/$mode.replay" >"$TMP/$mode.replay.hits"
    same_lines "$TMP/$mode.capture" "$TMP/$mode.replay.hits"
    nmiss=$(grep -c '"call": "miss"' "$TMP/$mode.replay")
    nerr=$(grep '"call": "miss"' "$TMP/$mode.replay" | grep -c '"error": 47')
    [ "$nmiss" -ge 1 ] && [ "$nmiss" = "$nerr" ] ||
        fail "$mode: the unrecorded query did not get error 47: $(grep miss "$TMP/$mode.replay" | head -2)"
    grep -q 'no recorded reply for key' "$TMP/$mode.replay" ||
        fail "$mode: the miss errmsg does not name the key"
    stop_wait $REPLAY_PID && fail "--strict replay exited 0 after misses"
    log=$TMP/replay.$REP.log
    grep -q 'miss #1: mtrace replay: no recorded reply for key' "$log" ||
        fail "$mode: no miss log line"
    grep -q "missed $nmiss," "$log" || fail "$mode: summary does not count $nmiss misses: $(tail -2 "$log")"
    grep -q 'closest recorded key' "$log" || fail "$mode: no closest key in the miss line"
    grep -q 'unacknowledged [1-9]' "$log" || fail "$mode: the w:0 insert was not counted: $(tail -2 "$log")"
    grep -q '"call": "fail_me", "error": 2' "$TMP/$mode.replay" || fail "$mode: fail_me did not fail with code 2"
    echo "ok: pymongo $mode: $(wc -l <"$TMP/$mode.capture") calls identical, $nmiss miss(es) reported, $nconn connections recorded, none empty"
done
