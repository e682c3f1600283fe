#!/usr/bin/env bash
# test_driver_monitor.sh -- libmongoc against `mtrace replay` of a trace
# recorded from pymongo (MockupDB with topologyVersion, so the hello
# replies make drivers use the streaming protocol):
#  - a libmongoc client pool's monitor gets awaitable hellos that replay
#    holds: heartbeats succeed, none fails, and it does not busy-loop;
#  - the find it sends differs from pymongo's only by the integer type of
#    limit (int64 against pymongo's int32): mongod answers both alike, and
#    so must replay (numbers are matched by value).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replay_lib.sh"
MON=$TOP/${BUILD:-build/release}/helpers/mongoc_monitor
[ -x "$MON" ] || fail "$MON not built (make helpers)"

capture_tv_trace "$TMP/tv.zst"

start_replay REP "$TMP/tv.zst"
"$MON" "mongodb://127.0.0.1:$REP/?heartbeatFrequencyMS=500&serverSelectionTimeoutMS=5000" 2500 \
    >"$TMP/mon.out" 2>"$TMP/mon.err" || fail "libmongoc against replay: $(cat "$TMP/mon.out" "$TMP/mon.err")"
stop_wait $REPLAY_PID || fail "replay exited $?"
out=$(cat "$TMP/mon.out")
echo "libmongoc monitor: $out"
grep -q '"finds": 2' <<<"$out" || fail "finds: $out $(cat "$TMP/mon.err")"
grep -q '"failed": 0' <<<"$out" || fail "heartbeats failed: $out $(cat "$TMP/mon.err")"
grep -q '"awaited": [1-9]' <<<"$out" || fail "no awaited heartbeat: $out"
n=$(sed 's/.*"heartbeats": \([0-9]*\).*/\1/' <<<"$out")
[ "$n" -ge 2 ] && [ "$n" -le 20 ] || fail "$n heartbeats in 2.5 s (want 2..20: held, not spinning)"
log=$TMP/replay.$REP.log
grep -q "missed 0" "$log" || fail "replay missed: $(grep -E 'miss|requests' "$log")"
echo "ok: libmongoc's streaming monitor and int64 limit served by replay of a pymongo trace"
