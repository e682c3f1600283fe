#!/usr/bin/env bash
# test_pcap_live.sh -- live capture on the loopback interface: pymongo
# against MockupDB while `mtrace capture --iface lo --port P --duration S`
# runs (stopped by SIGINT once the client is done); every call pymongo made
# is in the trace (exact count per command), every request got its reply on
# the same connection, no gap, and the trace says it came from a live
# capture.  Then --duration alone ends a capture.  Needs root (CAP_NET_RAW).
. "$(dirname "$0")/lib.sh"
B=$TOP/${BUILD:-build/release}
start_mock PORT
# --duration is a safety net here: the capture is stopped with SIGINT as
# soon as the client is done (a clean stop: flows closed, stats written).
"$MTRACE" capture --iface lo --port "$PORT" --duration 60 -o "$TMP/live.zst" \
    2>"$TMP/cap.err" &
CAP=$!
track_pid $CAP
for ((i = 0; i < 100; i++)); do [ -s "$TMP/live.zst" ] && break; sleep 0.05; done
[ -s "$TMP/live.zst" ] || { cat "$TMP/cap.err"; fail "capture did not start"; }
"$PYTHON" "$TOP/tests/integration/pcap_live_client.py" "$PORT" >"$TMP/sent" ||
    fail "pymongo client failed"
sleep 0.3 # let the last packets reach the capture
kill -INT $CAP
wait $CAP || { cat "$TMP/cap.err"; fail "mtrace capture exited $?"; }
cat "$TMP/cap.err"
"$B/helpers/pcap_tracecount" "$TMP/live.zst" >"$TMP/lst" || fail "cannot read trace"
grep -q "^header live prec=" "$TMP/lst" || fail "header: $(head -1 "$TMP/lst")"
# Every command pymongo sent, exactly as many times.
while read -r dir cmd n; do
    got=$(awk -v c="$cmd" '$1 == "msg" && $3 == "c2s" && $4 == "2013" && $5 == c' \
        "$TMP/lst" | wc -l)
    [ "$got" -eq "$n" ] || fail "$cmd: pymongo sent $n, trace has $got"
    echo "$cmd: $n sent, $got in the trace"
done <"$TMP/sent"
[ -s "$TMP/sent" ] || fail "client printed nothing"
# Each connection: as many replies as requests; no flags (gap, resync).
awk '$1 == "msg" { k = $2 " " $3; n[k]++ }
     $1 == "msg" && $6 != "flags=0" { bad++ }
     END { for (k in n) { split(k, a, " ");
             if (a[2] == "c2s" && n[a[1] " s2c"] != n[k]) { print "conn " a[1] ": " n[k] " requests, " n[a[1] " s2c"] " replies"; bad++ } }
           exit bad > 0 }' "$TMP/lst" || fail "unmatched or flagged messages"
grep -q "^stat gaps 0$" "$TMP/lst" || fail "gaps: $(grep '^stat gaps' "$TMP/lst")"
grep -q "^stat resyncs 0$" "$TMP/lst" || fail "resyncs"
[ "$(grep -c '^open ' "$TMP/lst")" -ge 1 ] || fail "no connection"
[ "$(grep -c '^close ' "$TMP/lst")" -eq "$(grep -c '^open ' "$TMP/lst")" ] ||
    fail "not every connection has its close record"
echo "live: $(grep -c '^msg ' "$TMP/lst") messages on $(grep -c '^open ' "$TMP/lst") connections"
# --duration alone ends a capture (nothing to see on an unused port).
timeout 20 "$MTRACE" capture --quiet --iface lo --port 1 --duration 1 \
    -o "$TMP/idle.zst" || fail "--duration 1: exit $?"
"$B/helpers/pcap_tracecount" "$TMP/idle.zst" | grep -q "^stat packets 0$" ||
    fail "--duration 1: unexpected packets"
# A bad interface or live filter is bad usage (exit 2, DESIGN.md's CLI
# contract), says which, and leaves no trace behind.
rc=0
"$MTRACE" capture --iface mtrace-nosuch0 --duration 1 -o "$TMP/bad.zst" \
    2>"$TMP/bad.err" || rc=$?
[ "$rc" -eq 2 ] || fail "--iface mtrace-nosuch0: exit $rc, want 2"
grep -q -- "--iface mtrace-nosuch0" "$TMP/bad.err" ||
    fail "--iface error does not name it: $(cat "$TMP/bad.err")"
rc=0
"$MTRACE" capture --iface lo --filter "tcp port (" --duration 1 \
    -o "$TMP/bad.zst" 2>"$TMP/bad.err" || rc=$?
[ "$rc" -eq 2 ] || fail "bad live --filter: exit $rc, want 2"
grep -q "bad --filter" "$TMP/bad.err" ||
    fail "bad live --filter: $(cat "$TMP/bad.err")"
[ ! -e "$TMP/bad.zst" ] || fail "a refused --iface/--filter left a trace"
