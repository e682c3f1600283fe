#!/usr/bin/env bash
# test_replay_mongoc.sh -- libmongoc (tests/helpers/mongoc_workload.c): the
# workload through `mtrace capture` to MockupDB, then against `mtrace
# replay` of that trace: same documents and errors; the unrecorded query
# gets the miss error (code 47).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replay_lib.sh"
WL=$TOP/${BUILD:-build/release}/helpers/mongoc_workload
[ -x "$WL" ] || fail "$WL not built (make helpers)"

start_mock MOCK
start_capture CAP "$MOCK" "$TMP/c.zst"
"$WL" "mongodb://127.0.0.1:$CAP/?serverSelectionTimeoutMS=5000" >"$TMP/c.capture" ||
    fail "mongoc workload failed through capture"
stop_wait $CAPTURE_PID || fail "capture exited $?"
grep -q '"value" : 42' "$TMP/c.capture" || fail "capture run did not find the document"

start_replay REP "$TMP/c.zst"
"$WL" "mongodb://127.0.0.1:$REP/?serverSelectionTimeoutMS=5000" --miss >"$TMP/c.replay" ||
    fail "mongoc workload failed against replay"
grep -v '"call": "miss"' "$TMP/c.replay" >"$TMP/c.hits"
same_lines "$TMP/c.capture" "$TMP/c.hits"
grep -q '"call": "miss", "error": 47' "$TMP/c.replay" ||
    fail "miss did not get error 47: $(grep miss "$TMP/c.replay")"
stop_wait $REPLAY_PID || fail "replay exited $?"
echo "ok: mongoc workload: $(wc -l <"$TMP/c.capture") calls identical, miss reported"
