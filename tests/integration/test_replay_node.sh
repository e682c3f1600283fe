#!/usr/bin/env bash
# test_replay_node.sh -- the Node.js driver (mongodb@6 from node_modules):
#  1. its workload through `mtrace capture` to MockupDB, then against
#     `mtrace replay` of that trace: same documents and errors, and the miss
#     error (code 47) for a query the trace lacks;
#  2. the streaming hello: a trace whose hello has topologyVersion (captured
#     from pymongo, since MockupDB rejects the Node driver's exhaustAllowed)
#     replayed to the Node driver (exhaust stream) and to pymongo 3.11
#     (awaitable hello): heartbeats succeed, none fails, and the server is
#     not busy-looping (few hello replies).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replay_lib.sh"
NODEWL=$TOP/tests/integration/replay_workload.js
[ -d "$TOP/tests/integration/node_modules/mongodb" ] ||
    fail "mongodb@6 missing: run tools/deps.sh --check-or-install"

start_mock MOCK
start_capture CAP "$MOCK" "$TMP/node.zst"
node "$NODEWL" "mongodb://127.0.0.1:$CAP/" >"$TMP/node.capture" ||
    fail "node workload failed through capture"
stop_wait $CAPTURE_PID || fail "capture exited $?"

start_replay REP "$TMP/node.zst"
node "$NODEWL" "mongodb://127.0.0.1:$REP/" --miss >"$TMP/node.replay" ||
    fail "node workload failed against replay"
grep -v '"call":"miss"' "$TMP/node.replay" >"$TMP/node.hits"
same_lines "$TMP/node.capture" "$TMP/node.hits"
grep -q '"call":"miss","error":47' "$TMP/node.replay" ||
    fail "miss did not get error 47: $(grep miss "$TMP/node.replay")"
stop_wait $REPLAY_PID || fail "replay exited $?"
echo "ok: node workload: $(wc -l <"$TMP/node.capture") calls identical, miss reported"

# streaming hello
capture_tv_trace "$TMP/tv.zst"

start_replay REP "$TMP/tv.zst"
node "$NODEWL" "mongodb://127.0.0.1:$REP/" --linger-ms 2500 >"$TMP/tv.node" ||
    fail "node against the topologyVersion trace failed"
beats=$(tail -1 "$TMP/tv.node")
echo "node monitor: $beats"
echo "$beats" | grep -q '"failed":0' || fail "node heartbeats failed: $beats"
n=$(echo "$beats" | sed 's/.*"heartbeats":\([0-9]*\).*/\1/')
[ "$n" -ge 2 ] || fail "node monitor saw $n heartbeats in 2.5 s"
[ "$n" -le 20 ] || fail "node monitor saw $n heartbeats in 2.5 s: busy loop?"

"$PYTHON" "$TOP/tests/integration/replay_monitor.py" "mongodb://127.0.0.1:$REP/" 2.5 >"$TMP/tv.py" ||
    fail "pymongo against the topologyVersion trace failed"
echo "pymongo monitor: $(cat "$TMP/tv.py")"
grep -q '"failed": 0' "$TMP/tv.py" || fail "pymongo heartbeats failed"
grep -q '"awaited": [1-9]' "$TMP/tv.py" || fail "pymongo saw no awaited hello"
grep -q '"value": 42' "$TMP/tv.py" || fail "pymongo find_one did not get the document"
stop_wait $REPLAY_PID || fail "replay exited $?"
log=$(ls "$TMP"/replay.$REP.log)
hellos=$(sed -n 's/.*hello \([0-9]*\)).*/\1/p' "$log")
echo "replay: $(tail -2 "$log" | head -1)"
[ -n "$hellos" ] && [ "$hellos" -le 60 ] || fail "$hellos hello replies in 5 s: busy loop"
echo "ok: streaming / awaitable hello for node and pymongo"
