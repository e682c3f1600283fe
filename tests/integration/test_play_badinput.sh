#!/usr/bin/env bash
# test_play_badinput.sh -- `mtrace play` on bad input and failing targets,
# and authentication against `mtrace replay --credentials` (mongod's
# SCRAM server side).  Each failure: exit 1 and one line on stderr saying
# what and where; the summary on stdout says what was sent and answered.
#  1. a trace with no client request; a trace cut mid-frame (the complete
#     records before the cut are played, then the loss is reported); a
#     missing file;
#     a synthetic trace of odd but valid records plays whole;
#  2. a target that is not MongoDB (an HTTP-like server), one that
#     refuses the connection; the -o trace of the first (and of a refused
#     authentication, 3.) reads back with everything play exchanged;
#  3. SCRAM-SHA-256 (options) and SCRAM-SHA-1 (a mongodb:// URI) with the
#     right password: every request
#     answered, the recorded handshakes and none of the recorded SASL
#     conversation re-sent; a wrong password: refused, one line;
#  4. the target killed mid-play: what was sent and answered is reported,
#     exit 1, and the -o trace reads back whole (dump exits 0);
#  5. bad usage: exit 2.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replay_lib.sh"
WL=$TOP/tests/integration/replay_workload.py

# one_line_fail OUTFILE ERRFILE RC TEXT: exit 1, one stderr line with TEXT
one_line_fail() {
    [ "$3" -eq 1 ] || fail "exit $3 (want 1): $(cat "$2")"
    [ "$(wc -l <"$2")" -eq 1 ] || fail "want one line on stderr, got: $(cat "$2")"
    grep -qF -- "$4" "$2" || fail "stderr lacks '$4': $(cat "$2")"
    echo "ok: $(cat "$2")"
}

start_mock MOCK
start_capture CAP "$MOCK" "$TMP/A.zst"
# three runs 0.3 s apart: the trace has several frames (one per 100 ms)
for run in 1 2 3; do
    "$PYTHON" "$WL" "mongodb://127.0.0.1:$CAP/" --rounds=3 >/dev/null || fail "workload through capture failed"
    sleep 0.3
done
stop_wait $CAPTURE_PID || fail "capture exited $?"
start_replay REP "$TMP/A.zst" --delay-ms 1
A_SUM=$(sha256sum <"$TMP/A.zst")

# out_reads_back OUT.zst JSON WHAT: after a failure, play's -o trace
# reads back whole and holds everything play exchanged: dump and stats
# exit 0, every connection play opened (JSON "connections") has its open
# and its close record, and every message it wrote or read is there: one
# hello per connection, then (the auth case) saslStart and saslContinue,
# each with its reply; the summary accounts for every request read (sent,
# not sent, or never re-sent by design).  The trace played is left as it
# was (checksum).
jnum() { "$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$@"; }
count() { grep "$1" "$TMP/rb.json" | grep -c -- "${2:-.}"; }
out_reads_back() {
    local conns
    "$MTRACE" dump --json "$1" >"$TMP/rb.json" 2>"$TMP/rb.err" ||
        fail "$3: the -o trace does not read back: $(cat "$TMP/rb.err")"
    "$MTRACE" stats "$1" >/dev/null 2>"$TMP/rb.err" || fail "$3: stats of the -o trace: $(cat "$TMP/rb.err")"
    conns=$(jnum "$2" connections)
    [ "$conns" -ge 1 ] || fail "$3: play opened no connection"
    [ "$(count '"type":"conn_open"')" -eq "$conns" ] && [ "$(count '"type":"conn_close"')" -eq "$conns" ] ||
        fail "$3: $conns connections, $(count '"type":"conn_open"') open and $(count '"type":"conn_close"') close records"
    [ "$(count '"dir":"c2s"' '"cmd":"hello"')" -eq "$conns" ] || fail "$3: not one hello per connection in the -o trace"
    # every request read from the trace is accounted for in the summary
    "$PYTHON" - "$2" <<'PY' || fail "$3: the summary does not account for every request read: $(cat "$2")"
import json, sys
d = json.load(open(sys.argv[1]))
parts = ("sent", "not_sent", "handshakes_skipped", "auth_skipped", "filtered", "no_live_cursor")
sys.exit(0 if d["requests_read"] > 0 and sum(d[k] for k in parts) == d["requests_read"] else 1)
PY
}

# ---- 1. bad traces ----
start_capture CAPE "$MOCK" "$TMP/empty.zst"
stop_wait $CAPTURE_PID || fail "empty capture exited $?"
"$MTRACE" play "$TMP/empty.zst" --target 127.0.0.1:"$REP" >"$TMP/o" 2>"$TMP/e"
one_line_fail "$TMP/o" "$TMP/e" $? "holds no client request"

size=$(stat -c %s "$TMP/A.zst")
head -c $((size * 3 / 4)) "$TMP/A.zst" >"$TMP/cut.zst"
"$MTRACE" play "$TMP/cut.zst" --target 127.0.0.1:"$REP" --max-speed >"$TMP/o" 2>"$TMP/e"
one_line_fail "$TMP/o" "$TMP/e" $? "cut.zst"
grep -Eq 'truncated|lost' "$TMP/e" || fail "the cut is not reported as such: $(cat "$TMP/e")"
grep -Eq '^played .*: [1-9][0-9]* requests sent' "$TMP/o" || fail "nothing before the cut was played: $(head -1 "$TMP/o")"

"$MTRACE" play "$TMP/nonexistent.zst" --target 127.0.0.1:"$REP" >"$TMP/o" 2>"$TMP/e"
one_line_fail "$TMP/o" "$TMP/e" $? "nonexistent.zst"

# a synthetic trace of odd messages (tests/helpers/mktrace: legacy
# isMaster, a SASL conversation, an OP_COMPRESSED insert with a document
# sequence, a ping whose reply was never recorded, a reply to nothing, a
# moreToCome insert, a malformed message): played whole, exit 0
MKT=$TOP/${BUILD:-build/release}/helpers/mktrace
"$MKT" "$TMP/mk.zst" >/dev/null || fail "mktrace failed"
"$MTRACE" play "$TMP/mk.zst" --target 127.0.0.1:"$MOCK" --max-speed -o "$TMP/mkp.zst" >"$TMP/o" 2>"$TMP/e" ||
    fail "odd trace: exit $?: $(cat "$TMP/e")"
grep -Eq ': 103 requests sent, 102 answered, 1 without reply by design \(moreToCome\), 0 unanswered' "$TMP/o" ||
    fail "odd trace: $(head -1 "$TMP/o")"
grep -q 'never re-sent: 1 recorded handshakes, 2 authentication messages' "$TMP/o" || fail "odd trace: $(sed -n 2p "$TMP/o")"
"$MTRACE" dump "$TMP/mkp.zst" | grep ' c2s ' | grep -c 'seq=documents:2' | grep -qx 2 ||
    fail "odd trace: the document sequences were not sent"
echo "ok: odd synthetic trace: $(head -1 "$TMP/o" | cut -d: -f2-)"

# ---- 2. bad targets ----
NOTM=$(free_port)
"$PYTHON" - "$NOTM" >"$TMP/notm.log" <<'PY' &
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8)
print("listening on 127.0.0.1:%s" % sys.argv[1], flush=True)
while True:
    c, _ = s.accept()
    c.recv(4096)
    c.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
    c.close()
PY
NOTM_PID=$!
track_pid $NOTM_PID
wait_listening "$TMP/notm.log" $NOTM_PID "the HTTP server"
"$MTRACE" play "$TMP/A.zst" --target 127.0.0.1:"$NOTM" --json -o "$TMP/notm.zst" >"$TMP/o" 2>"$TMP/e"
one_line_fail "$TMP/o" "$TMP/e" $? "is not a MongoDB server"
out_reads_back "$TMP/notm.zst" "$TMP/o" "not MongoDB"
# the HTTP answer is no MongoDB message: the trace holds the hellos alone
[ "$(count '"type":"msg"')" -eq "$(jnum "$TMP/o" connections)" ] ||
    fail "not MongoDB: the -o trace holds $(count '"type":"msg"') messages"
[ "$(sha256sum <"$TMP/A.zst")" = "$A_SUM" ] || fail "not MongoDB: the played trace changed"
echo "ok: not MongoDB: the -o trace reads back with its $(count '"type":"conn_open"') connection(s) and hello(s)"

CLOSED=$(free_port)
"$MTRACE" play "$TMP/A.zst" --target 127.0.0.1:"$CLOSED" >"$TMP/o" 2>"$TMP/e"
one_line_fail "$TMP/o" "$TMP/e" $? "cannot connect to 127.0.0.1:$CLOSED"

# ---- 3. authentication ----
start_replay AUTH "$TMP/A.zst" --credentials 'app:pa:ss'
auth_pid=$REPLAY_PID
# a trace recorded from an authenticating pymongo: its SASL conversation
# is in the trace and must not be re-sent
start_capture CAPA "$AUTH" "$TMP/authrec.zst"
"$PYTHON" "$WL" "mongodb://app:pa%3Ass@127.0.0.1:$CAPA/" >/dev/null || fail "authenticated workload failed"
stop_wait $CAPTURE_PID || fail "capture exited $?"
"$MTRACE" dump --json "$TMP/authrec.zst" 2>/dev/null | grep -q '"auth":true' || fail "no SASL in the recorded trace"
for mech in SCRAM-SHA-256 SCRAM-SHA-1; do
    # SCRAM-SHA-256 from the options, SCRAM-SHA-1 from a URI
    if [ $mech = SCRAM-SHA-256 ]; then
        who=(--target 127.0.0.1:"$AUTH" --username app --password 'pa:ss' --auth-mechanism $mech)
    else
        who=(--target "mongodb://app:pa%3Ass@127.0.0.1:$AUTH/admin?authMechanism=$mech")
    fi
    "$MTRACE" play "$TMP/authrec.zst" "${who[@]}" --max-speed -o "$TMP/auth.zst" --force \
        >"$TMP/o" 2>"$TMP/e" || fail "$mech: play exited $?: $(cat "$TMP/e")"
    grep -q 'pa:ss\|pa%3Ass' "$TMP/o" "$TMP/e" && fail "$mech: the password is in the output"
    grep -Eq ' 0 unanswered, 0 not sent' "$TMP/o" || fail "$mech: $(head -1 "$TMP/o")"
    grep -Eq ' [1-9][0-9]* authentication messages' "$TMP/o" || fail "$mech: recorded SASL not counted: $(sed -n 2p "$TMP/o")"
    "$MTRACE" dump --json "$TMP/auth.zst" >"$TMP/auth.json" 2>/dev/null
    n=$(grep '"dir":"c2s"' "$TMP/auth.json" | grep -c '"cmd":"saslStart"')
    conns=$(grep -c '"type":"conn_open"' "$TMP/auth.json")
    [ "$n" -eq "$conns" ] && [ "$n" -ge 1 ] ||
        fail "$mech: $n saslStart on $conns connections (want play's own, one each)"
    grep '"dir":"c2s"' "$TMP/auth.json" | grep '"cmd":"saslStart"' | grep -q "\"mechanism\" : \"$mech\"" ||
        fail "$mech: the saslStart does not name $mech"
    echo "ok: $mech authentication, $(head -1 "$TMP/o" | cut -d: -f2-)"
done
"$MTRACE" play "$TMP/A.zst" --target 127.0.0.1:"$AUTH" --username app --password wrong \
    --json -o "$TMP/refused.zst" >"$TMP/o" 2>"$TMP/e"
one_line_fail "$TMP/o" "$TMP/e" $? "refused authentication as app"
grep -q 'code 18' "$TMP/e" || fail "no code 18 in: $(cat "$TMP/e")"
out_reads_back "$TMP/refused.zst" "$TMP/o" "refused auth"
n=$(jnum "$TMP/o" connections)
[ "$(count '"dir":"c2s"' '"cmd":"saslStart"')" -eq "$n" ] && [ "$(count '"dir":"c2s"' '"cmd":"saslContinue"')" -eq "$n" ] ||
    fail "refused auth: the SASL requests are not all in the -o trace"
[ "$(count '"dir":"s2c"')" -eq "$(count '"dir":"c2s"')" ] || fail "refused auth: a reply is missing from the -o trace"
grep '"dir":"s2c"' "$TMP/rb.json" | tail -1 | grep -q '"code" : 18' || fail "refused auth: the refusal (code 18) is not in the -o trace"
[ "$(sha256sum <"$TMP/A.zst")" = "$A_SUM" ] || fail "refused auth: the played trace changed"
echo "ok: refused auth: the -o trace reads back with hello, saslStart, saslContinue and their replies (the refusal last)"
stop_wait $auth_pid

# ---- 4. the target killed mid-play ----
start_replay SLOW "$TMP/A.zst" --delay-ms 200
slow_pid=$REPLAY_PID
"$MTRACE" play "$TMP/A.zst" --target 127.0.0.1:"$SLOW" --max-speed -o "$TMP/killed.zst" \
    >"$TMP/o" 2>"$TMP/e" &
play_pid=$!
sleep 1 # 200 ms per reply: a few exchanges are done, most are not
kill -KILL $slow_pid
wait $play_pid
one_line_fail "$TMP/o" "$TMP/e" $? "closed the connection"
grep -Eq '^played .*: [1-9][0-9]* requests sent, [0-9]+ answered' "$TMP/o" || fail "no summary: $(cat "$TMP/o")"
grep -Eq ' [1-9][0-9]* unanswered| [1-9][0-9]* not sent' "$TMP/o" || fail "nothing reported missing: $(head -1 "$TMP/o")"
"$MTRACE" dump "$TMP/killed.zst" >"$TMP/killed.txt" || fail "the -o trace does not read back: $(tail -1 "$TMP/killed.txt")"
grep -q ' c2s ' "$TMP/killed.txt" || fail "no request in the -o trace"
echo "ok: killed target: $(head -1 "$TMP/o" | cut -d: -f2-)"

# ---- 5. usage ----
for args in "" "--target 127.0.0.1:1" "$TMP/A.zst" "$TMP/A.zst --target nope" \
    "$TMP/A.zst --target 127.0.0.1:1 --speed 0" "$TMP/A.zst --target 127.0.0.1:1 --speed 2 --max-speed" \
    "$TMP/A.zst --target 127.0.0.1:1 --username u" "$TMP/A.zst --target 127.0.0.1:1 --bogus"; do
    # shellcheck disable=SC2086
    "$MTRACE" play $args >/dev/null 2>"$TMP/e"
    rc=$?
    [ $rc -eq 2 ] || fail "play $args: exit $rc (want 2)"
    [ "$(wc -l <"$TMP/e")" -eq 1 ] || fail "play $args: $(cat "$TMP/e")"
done
echo "ok: bad usage exits 2 with one line"
