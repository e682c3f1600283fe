#!/usr/bin/env bash
# test_pcap_live.sh -- live capture on the loopback interface: pymongo
# against MockupDB while `mtrace capture --iface lo --port P --duration S`
# runs (stopped by SIGINT once the client is done); every call pymongo made
# is in the trace (exact count per command), every request got its reply on
# the same connection, no gap, and the trace says it came from a live
# capture.  Then a burst the capture cannot read while it happens (the
# capture process is stopped): every call is still in the trace and the
# kernel dropped nothing; with a tiny ring the loss is reported, not silent.
# Then --duration alone ends a capture.  Needs root (CAP_NET_RAW).
. "$(dirname "$0")/lib.sh"
B=$TOP/${BUILD:-build/release}
start_mock PORT

# live_start OUT [ARGS]: a capture of $PORT into $TMP/OUT in the background
# (pid in CAP), once its trace header is written (the ring is then active).
live_start() {
    local out=$1
    shift
    "$MTRACE" capture --iface lo --port "$PORT" --duration 60 "$@" \
        -o "$TMP/$out" 2>"$TMP/$out.err" &
    CAP=$!
    track_pid $CAP
    for ((i = 0; i < 100; i++)); do [ -s "$TMP/$out" ] && break; sleep 0.05; done
    [ -s "$TMP/$out" ] || { cat "$TMP/$out.err"; fail "capture did not start"; }
}

# burst N: the capture process is stopped (SIGSTOP) while N find_one calls
# from 4 pymongo threads run, so every packet of the burst has to wait in
# the kernel ring; then it continues and is stopped with SIGINT (its drain
# takes the last ring block).  Leaves the sent counts in $TMP/burst.sent.
burst() {
    kill -STOP $CAP
    "$PYTHON" "$TOP/tests/integration/pcap_burst_client.py" "$PORT" "$1" 4 \
        >"$TMP/burst.sent"
    local rc=$?
    kill -CONT $CAP
    [ $rc -eq 0 ] || fail "pymongo burst client failed"
    kill -INT $CAP
    wait $CAP || fail "mtrace capture exited $? after the burst"
}
# live_calls IFACE NAME: pymongo's calls while `mtrace capture --iface
# IFACE` runs; every command pymongo sent is in $TMP/NAME.lst exactly as
# many times, each connection has as many replies as requests, no gap, no
# resync, every connection closed.  --duration is a safety net: the capture
# is stopped with SIGINT as soon as the client is done (a clean stop: flows
# closed, stats written).
live_calls() {
    local iface=$1 name=$2 lst=$TMP/$2.lst
    "$MTRACE" capture --iface "$iface" --port "$PORT" --duration 60 \
        -o "$TMP/$name.zst" 2>"$TMP/$name.err" &
    CAP=$!
    track_pid $CAP
    for ((i = 0; i < 100; i++)); do [ -s "$TMP/$name.zst" ] && break; sleep 0.05; done
    [ -s "$TMP/$name.zst" ] || { cat "$TMP/$name.err"; fail "$iface: capture did not start"; }
    "$PYTHON" "$TOP/tests/integration/pcap_live_client.py" "$PORT" >"$TMP/sent" ||
        fail "pymongo client failed"
    sleep 0.3 # let the last packets reach the capture
    kill -INT $CAP
    wait $CAP || { cat "$TMP/$name.err"; fail "$iface: mtrace capture exited $?"; }
    cat "$TMP/$name.err"
    "$B/helpers/pcap_tracecount" "$TMP/$name.zst" >"$lst" || fail "cannot read trace"
    grep -q "^header live prec=" "$lst" || fail "header: $(head -1 "$lst")"
    while read -r dir cmd n; do
        got=$(awk -v c="$cmd" '$1 == "msg" && $3 == "c2s" && $4 == "2013" && $5 == c' \
            "$lst" | wc -l)
        [ "$got" -eq "$n" ] || fail "$iface: $cmd: pymongo sent $n, trace has $got"
        echo "$iface: $cmd: $n sent, $got in the trace"
    done <"$TMP/sent"
    [ -s "$TMP/sent" ] || fail "client printed nothing"
    awk '$1 == "msg" { k = $2 " " $3; n[k]++ }
         $1 == "msg" && $6 != "flags=0" { bad++ }
         END { for (k in n) { split(k, a, " ");
                 if (a[2] == "c2s" && n[a[1] " s2c"] != n[k]) { print "conn " a[1] ": " n[k] " requests, " n[a[1] " s2c"] " replies"; bad++ } }
               exit bad > 0 }' "$lst" || fail "$iface: unmatched or flagged messages"
    grep -q "^stat gaps 0$" "$lst" || fail "$iface: gaps: $(grep '^stat gaps' "$lst")"
    grep -q "^stat resyncs 0$" "$lst" || fail "$iface: resyncs"
    [ "$(grep -c '^open ' "$lst")" -ge 1 ] || fail "$iface: no connection"
    [ "$(grep -c '^close ' "$lst")" -eq "$(grep -c '^open ' "$lst")" ] ||
        fail "$iface: not every connection has its close record"
    echo "$iface: $(grep -c '^msg ' "$lst") messages on $(grep -c '^open ' "$lst") connections"
}
live_calls lo live
# "any" (tcpdump -i any): Linux cooked headers, where the default port
# filter must not use "vlan" (libpcap refuses it there).
live_calls any any
# The burst: 1500 round trips, ~3000 packets, each queued twice on lo.  The
# old immediate-mode ring (TPACKET_V2, 64 KiB slots: 256 packets on lo)
# dropped all but ~250 of them; the TPACKET_V3 ring holds them all.
live_start burst.zst
burst 1500
cat "$TMP/burst.zst.err"
"$B/helpers/pcap_tracecount" "$TMP/burst.zst" >"$TMP/burst.lst" ||
    fail "cannot read the burst trace"
got=$(awk '$1 == "msg" && $3 == "c2s" && $5 == "find"' "$TMP/burst.lst" | wc -l)
grep -q "^c2s find 1500$" "$TMP/burst.sent" || fail "burst client: $(cat "$TMP/burst.sent")"
grep -q "^stat kernel_dropped 0$" "$TMP/burst.lst" ||
    fail "burst: $(grep '^stat kernel_dropped' "$TMP/burst.lst"), $got of 1500 finds"
[ "$got" -eq 1500 ] || fail "burst: 1500 finds sent, $got in the trace"
awk '$1 == "msg" { n[$2 " " $3]++; if ($6 != "flags=0") bad++ }
     END { for (k in n) { split(k, a, " ");
             if (a[2] == "c2s" && n[a[1] " s2c"] != n[k]) { print "conn " a[1] ": " n[k] " requests, " n[a[1] " s2c"] " replies"; bad++ } }
           exit bad > 0 }' "$TMP/burst.lst" || fail "burst: unmatched or flagged messages"
grep -q "^stat gaps 0$" "$TMP/burst.lst" || fail "burst: gaps"
echo "burst: 1500 finds sent while the capture was stopped, $got in the trace, kernel_dropped 0"

# A ring too small for the burst (1 MiB: 4 blocks): the loss is reported in
# the trace's stats, the summary and a warning, and covers every missing
# call (each missing find lost at least its request packet).
live_start small.zst --buffer-mb 1
burst 1500
"$B/helpers/pcap_tracecount" "$TMP/small.zst" >"$TMP/small.lst" ||
    fail "cannot read the small-ring trace"
got=$(awk '$1 == "msg" && $3 == "c2s" && $5 == "find"' "$TMP/small.lst" | wc -l)
kd=$(awk '$1 == "stat" && $2 == "kernel_dropped" { print $3 }' "$TMP/small.lst")
[ -n "$kd" ] && [ "$kd" -gt 0 ] || fail "1 MiB ring: kernel_dropped '$kd'"
[ "$got" -lt 1500 ] || fail "1 MiB ring: all 1500 finds yet kernel_dropped $kd"
[ "$kd" -ge $((1500 - got)) ] ||
    fail "1 MiB ring: $((1500 - got)) finds missing, kernel_dropped only $kd"
grep -q "kernel-dropped $kd\$" "$TMP/small.zst.err" || fail "summary: $(cat "$TMP/small.zst.err")"
grep -q "warning: --iface lo: the kernel dropped $kd packets" "$TMP/small.zst.err" ||
    fail "no kernel-drop warning: $(cat "$TMP/small.zst.err")"
echo "1 MiB ring: $got of 1500 finds, kernel_dropped $kd, reported"

# An interface that is down: a runtime error (exit 1) that says so.
down=$(ip -br link 2>/dev/null | awk '$2 == "DOWN" { print $1; exit }')
if [ -n "$down" ]; then
    "$MTRACE" capture --iface "$down" --duration 1 -o "$TMP/down.zst" 2>"$TMP/down.err"
    rc=$?
    [ $rc -eq 1 ] || fail "--iface $down (down): exit $rc, want 1: $(cat "$TMP/down.err")"
    grep -q "not up" "$TMP/down.err" || fail "--iface $down: $(cat "$TMP/down.err")"
    [ ! -e "$TMP/down.zst" ] || fail "--iface $down: a trace was left"
    echo "--iface $down (down): exit 1, $(cat "$TMP/down.err")"
else
    echo "no interface is down here: the down-interface check is skipped"
fi

# --duration alone ends a capture (nothing to see on an unused port).
timeout 20 "$MTRACE" capture --quiet --iface lo --port 1 --duration 1 \
    -o "$TMP/idle.zst" || fail "--duration 1: exit $?"
"$B/helpers/pcap_tracecount" "$TMP/idle.zst" | grep -q "^stat packets 0$" ||
    fail "--duration 1: unexpected packets"
# A missing interface is a runtime failure (exit 1, like a missing --pcap
# file), a bad live filter bad usage (exit 2, DESIGN.md's CLI contract);
# each says which, and leaves no trace behind.
rc=0
"$MTRACE" capture --iface mtrace-nosuch0 --duration 1 -o "$TMP/bad.zst" \
    2>"$TMP/bad.err" || rc=$?
[ "$rc" -eq 1 ] || fail "--iface mtrace-nosuch0: exit $rc, want 1"
grep -q -- "--iface mtrace-nosuch0" "$TMP/bad.err" ||
    fail "--iface error does not name it: $(cat "$TMP/bad.err")"
rc=0
"$MTRACE" capture --iface lo --filter "tcp port (" --duration 1 \
    -o "$TMP/bad.zst" 2>"$TMP/bad.err" || rc=$?
[ "$rc" -eq 2 ] || fail "bad live --filter: exit $rc, want 2"
grep -q "bad --filter" "$TMP/bad.err" ||
    fail "bad live --filter: $(cat "$TMP/bad.err")"
[ ! -e "$TMP/bad.zst" ] || fail "a refused --iface/--filter left a trace"
