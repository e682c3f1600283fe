#!/usr/bin/env bash
# test_pcap_synth.sh -- `mtrace capture --pcap` on synthetic captures written
# by tests/helpers/mkpcap (libpcap's dump API): one per hard case (reordered,
# duplicated, overlapping, lost, truncated, wrapped, mid-stream, IPv6, VLAN,
# QinQ, cooked v1/v2, NULL, raw IP, nanosecond, reset, compressed, several
# flows, idle timeout, 4-tuple reuse) plus pcapng conversions (editcap -F
# pcapng).  Each trace, listed by
# tests/helpers/pcap_tracecount, must equal tests/data/pcap/<case>.out
# exactly (messages, flags, CRC of the bytes, timestamps, closes, stats).
# Set PCAP_BLESS=1 to rewrite the .out files (then review every diff).
. "$(dirname "$0")/lib.sh"
B=$TOP/${BUILD:-build/release}
EXP=$TOP/tests/data/pcap
"$B/helpers/mkpcap" "$TMP" || fail "mkpcap"
editcap -F pcapng "$TMP/basic.pcap" "$TMP/basic_ng.pcap" || fail "editcap"
editcap -F pcapng "$TMP/nsec.pcap" "$TMP/nsec_ng.pcap" || fail "editcap"
n=0
for pcap in "$TMP"/*.pcap; do
    c=$(basename "$pcap" .pcap)
    "$MTRACE" capture --quiet --pcap "$pcap" -o "$TMP/$c.zst" ||
        fail "$c: mtrace capture exited $?"
    "$B/helpers/pcap_tracecount" "$TMP/$c.zst" >"$TMP/$c.out" ||
        fail "$c: cannot read the trace back"
    want=$EXP/$c.out
    case $c in basic_ng) want=$EXP/basic.out ;; nsec_ng) want=$EXP/nsec.out ;; esac
    if [ -n "${PCAP_BLESS:-}" ] && [ "$want" = "$EXP/$c.out" ]; then
        cp "$TMP/$c.out" "$want"
    fi
    diff -u "$want" "$TMP/$c.out" || fail "$c: trace differs from $want"
    n=$((n + 1))
done
[ "$n" -ge 23 ] || fail "only $n cases ran"
# --filter replaces the port filter: the HTTP flow of "multi" is followed
# too (mid-stream, its 5 bytes never frame); --port still names the server.
"$MTRACE" capture --quiet --pcap "$TMP/multi.pcap" --filter tcp -o "$TMP/f.zst" ||
    fail "filter: exit $?"
"$B/helpers/pcap_tracecount" "$TMP/f.zst" >"$TMP/f.out"
grep -q '^open 3 10.0.0.1:40000 10.0.0.2:80 ' "$TMP/f.out" || fail "filter: no flow 3"
[ "$(grep -c '^msg ' "$TMP/f.out")" -eq 16 ] || fail "filter: messages"
grep -q '^stat skipped_bytes 5$' "$TMP/f.out" || fail "filter: skipped bytes"
grep -q '^stat midstream 1$' "$TMP/f.out" || fail "filter: midstream"
# From standard input (a pipe): the same trace.
"$MTRACE" capture --quiet --pcap - -o "$TMP/stdin.zst" <"$TMP/lost.pcap" ||
    fail "stdin: exit $?"
"$B/helpers/pcap_tracecount" "$TMP/stdin.zst" | diff -u "$EXP/lost.out" - ||
    fail "stdin: trace differs"
# The summary on stderr states the statistics.
"$MTRACE" capture --force --pcap "$TMP/lost.pcap" -o "$TMP/l.zst" 2>"$TMP/sum" ||
    fail "lost: exit $?"
grep -q "gaps 2 (160 bytes), resyncs 1" "$TMP/sum" || { cat "$TMP/sum"; fail "summary"; }
# Bad input: a clear error and exit 1, no trace left behind.
printf 'not a capture' >"$TMP/junk.pcap"
"$MTRACE" capture --pcap "$TMP/junk.pcap" -o "$TMP/junk.zst" 2>"$TMP/err"
[ $? -eq 1 ] || fail "junk: want exit 1"
grep -q "not a pcap or pcapng file" "$TMP/err" || fail "junk: $(cat "$TMP/err")"
[ ! -e "$TMP/junk.zst" ] || fail "junk: a trace was left"
# A trace handed over instead of a capture is named as one.
"$MTRACE" capture --pcap "$TOP/traces/sample.zst" -o "$TMP/junk.zst" 2>"$TMP/err"
[ $? -eq 1 ] || fail "trace as --pcap: want exit 1"
grep -q "zstd data (an mtrace trace?), not a capture" "$TMP/err" || fail "trace as --pcap: $(cat "$TMP/err")"
[ ! -e "$TMP/junk.zst" ] || fail "trace as --pcap: a trace was left"
# A capture cut in the middle of a packet (tcpdump killed): a warning, and
# every complete packet before the cut is still used.
head -c 1500 "$TMP/basic.pcap" >"$TMP/cut.pcap"
"$MTRACE" capture --pcap "$TMP/cut.pcap" -o "$TMP/cut.zst" 2>"$TMP/err" ||
    fail "cut: exit $?"
grep -q "truncated" "$TMP/err" || fail "cut: no warning: $(cat "$TMP/err")"
"$B/helpers/pcap_tracecount" "$TMP/cut.zst" | grep -q "^msg 1 c2s 2013 ping" ||
    fail "cut: the first request is missing"
echo "pcap synthetic: $n captures as expected"
