#!/usr/bin/env bash
# test_dump_stats.sh -- `mtrace dump` and `mtrace stats` on a trace written by
# tests/helpers/mktrace (real wire messages from core/wire's encoders, known
# timestamps: 100 finds whose replies come after 1..100 ms), checked with jq;
# then on a truncated copy, a corrupted copy, stdin, and bad usage.
# Runtime: about a second.
. "$(dirname "$0")/lib.sh"

MKTRACE=$TOP/${BUILD:-build/release}/helpers/mktrace
[ -x "$MKTRACE" ] || fail "$MKTRACE not built (make helpers)"
T=$TMP/t.zst

# jqe FILTER FILE: FILTER yields booleans over JSON lines; true if it yields
# at least one and all are true (jq -e alone looks only at the last input).
jqe() { jq -s -e "[.[] | $1] | length > 0 and all" "$2" >/dev/null; }
"$MKTRACE" "$T" || fail "mktrace failed"

# ---- dump --json: every line is JSON; fields as written ----
"$MTRACE" dump --json "$T" >"$TMP/d.json" 2>"$TMP/d.err" || fail "dump --json exit $?"
jq -e . "$TMP/d.json" >/dev/null || fail "dump --json output is not JSON lines"
n=$(jq -s '[.[] | select(.type == "msg")] | length' "$TMP/d.json")
[ "$n" = 212 ] || fail "expected 212 messages, got $n"
n=$(jq -r 'select(.type == "msg" and .dir == "c2s") | .cmd' "$TMP/d.json" | grep -cx find)
[ "$n" = 100 ] || fail "expected 100 find requests, got $n"
# replies name the command of the request they answer
n=$(jq -r 'select(.type == "msg" and .dir == "s2c" and .cmd == "find") | .response_to' "$TMP/d.json" | wc -l)
[ "$n" = 100 ] || fail "expected 100 find replies, got $n"
jqe 'select(.type == "msg" and .request_id == 10) | .body.find == "test_col" and .db == "benchmark_db" and .coll == "test_col" and .op == "OP_MSG"' "$TMP/d.json" || fail "find request fields"
jqe 'select(.type == "msg" and .request_id == 1000) | .body.cursor.firstBatch[0].value == 42' "$TMP/d.json" || fail "find reply body"
# OP_COMPRESSED: zlib request with a kind-1 sequence, snappy reply inflated by dump
jqe 'select(.type == "msg" and .request_id == 500) | .compressed == "zlib" and (.sequences.documents | length) == 2 and .sequences.documents[1].x == "two"' "$TMP/d.json" || fail "compressed insert with documents sequence"
jqe 'select(.type == "msg" and .request_id == 600) | .compressed == "snappy" and .body.n == 2 and .cmd == "insert"' "$TMP/d.json" || fail "snappy reply not decompressed"
jqe 'select(.type == "msg" and .request_id == 1) | .op == "OP_QUERY" and .cmd == "isMaster" and .db == "admin"' "$TMP/d.json" || fail "legacy OP_QUERY isMaster"
jqe 'select(.type == "msg" and .request_id == 201) | .op == "OP_REPLY" and .ndocs == 1 and .body.ismaster == true' "$TMP/d.json" || fail "legacy OP_REPLY"
# authentication conversation marked on requests and replies, and on stderr
n=$(jq -s '[.[] | select(.type == "msg" and .auth)] | length' "$TMP/d.json")
[ "$n" = 4 ] || fail "expected 4 auth messages, got $n"
grep -q 'authentication conversations' "$TMP/d.err" || fail "no auth note on stderr"
# a malformed message is printed with an error
jqe 'select(.type == "msg" and .request_id == 503) | (.error | test("messageLength")) and (.trace_flags == ["malformed"])' "$TMP/d.json" || fail "malformed message without error field"
for ty in header conn_open conn_close stats end; do
    jqe "select(.type == \"$ty\") | true" "$TMP/d.json" || fail "no $ty record in dump"
done
jqe 'select(.type == "stats") | .stats.packets == 1234' "$TMP/d.json" || fail "stats record"

# ---- an independent reader (python + zstd CLI, from docs/trace-format.md) ----
"$PYTHON" "$TOP/tests/integration/trace_indep.py" "$T" >"$TMP/i.json" || fail "independent reader"
jq -e '.c2s == 107 and .s2c == 105 and .types["3"] == 212 and .end.records == 218 and .index.frames == 5 and .index.records == 219 and .header.desc == "mktrace"' \
    "$TMP/i.json" >/dev/null || fail "independent reader disagrees: $(cat "$TMP/i.json")"

# ---- dump plain ----
"$MTRACE" dump "$T" >"$TMP/d.txt" 2>/dev/null || fail "dump exit $?"
n=$(grep -c ' find db=benchmark_db coll=test_col ' "$TMP/d.txt")
[ "$n" = 100 ] || fail "plain dump: expected 100 find lines, got $n"
grep -q 'OP_MSG(zlib) req=500 to=0 insert' "$TMP/d.txt" || fail "plain dump: compressed insert"
cat "$T" | "$MTRACE" dump - >"$TMP/d2.txt" 2>/dev/null || fail "dump - (stdin) exit $?"
cmp -s "$TMP/d.txt" "$TMP/d2.txt" || fail "dump from stdin differs"

# ---- stats --json: exact figures (synthetic timestamps) ----
"$MTRACE" stats --json "$T" >"$TMP/s.json" || fail "stats --json exit $?"
jq -e '.latency_ms.find | .count == 100 and .mean == 50.5 and .p50 == 50 and .p90 == 90 and .p99 == 99 and .max == 100 and (.stdev_pct > 57.1 and .stdev_pct < 57.2)' \
    "$TMP/s.json" >/dev/null || fail "find latency: $(jq -c .latency_ms.find "$TMP/s.json")"
jq -e '.latency_ms.isMaster.p50 == 0.2 and .latency_ms.insert.max == 2' "$TMP/s.json" >/dev/null ||
    fail "isMaster/insert latency"
jq -e '.unmatched.requests == 2 and .unmatched.replies == 1 and .no_reply_expected == 1' "$TMP/s.json" >/dev/null ||
    fail "unmatched: $(jq -c '[.unmatched, .no_reply_expected]' "$TMP/s.json")"
jq -e '.by_opcode.OP_MSG == 210 and .by_opcode.OP_QUERY == 1 and .by_opcode.OP_REPLY == 1' "$TMP/s.json" >/dev/null ||
    fail "by_opcode"
jq -e '.by_command.ping.unmatched == 1 and .by_command.find.requests == 100' "$TMP/s.json" >/dev/null || fail "by_command"
jq -e '.connections.opened == 2 and .connections.closed == 2 and .messages.total == 212 and .messages.compressed == 2 and .messages.malformed == 1' \
    "$TMP/s.json" >/dev/null || fail "connections/messages"
jq -e '.capture_stats.packets == 1234 and .complete == true' "$TMP/s.json" >/dev/null || fail "capture stats"
"$MTRACE" stats "$T" >"$TMP/s.txt" || fail "stats exit $?"
grep -Eq '^  find +100 +100 +0 +50\.500 ' "$TMP/s.txt" || fail "plain stats find line: $(grep find "$TMP/s.txt")"

# ---- TLS handshake records (mktrace --tls: 4 of them, known values) ----
TT=$TMP/tls.zst
"$MKTRACE" --tls "$TT" || fail "mktrace --tls failed"
"$MTRACE" dump --json "$TT" >"$TMP/tls.json" 2>/dev/null || fail "dump --json of the TLS trace exit $?"
n=$(jq -s '[.[] | select(.type == "tls")] | length' "$TMP/tls.json")
[ "$n" = 4 ] || fail "expected 4 tls records in dump --json, got $n"
jqe 'select(.type == "tls" and .conn == 1 and .leg == "client") | .ok and .t_ns == 1002000000 and .handshake_ns == 2000000 and .version == "TLSv1.3" and .cipher == "TLS_AES_256_GCM_SHA384" and .group == "X25519" and .sni == null and .error == null and (.resumed or .peer_cert or .peer_verified | not)' \
    "$TMP/tls.json" || fail "tls record conn 1 client: $(grep '"tls"' "$TMP/tls.json" | head -1)"
jqe 'select(.type == "tls" and .conn == 1 and .leg == "target") | .ok and .sni == "db.example.net" and .peer_cert and .peer_verified and .group == null' \
    "$TMP/tls.json" || fail "tls record conn 1 target"
jqe 'select(.type == "tls" and .conn == 2 and .leg == "client") | .ok and .resumed and .cipher == "TLS_AES_128_GCM_SHA256"' "$TMP/tls.json" ||
    fail "tls record conn 2 client"
jqe 'select(.type == "tls" and .conn == 2 and .leg == "target") | (.ok | not) and .error == "certificate verify failed" and .version == "" and .handshake_ns == 1000000' \
    "$TMP/tls.json" || fail "tls record conn 2 target (failed)"
"$MTRACE" dump "$TT" >"$TMP/tls.txt" 2>/dev/null || fail "dump of the TLS trace exit $?"
grep -q '^ *0\.002000 conn=1 tls client TLSv1.3 TLS_AES_256_GCM_SHA384 X25519 handshake=2\.000ms$' "$TMP/tls.txt" ||
    fail "plain dump tls line: $(grep ' tls ' "$TMP/tls.txt" | head -2)"
grep -q 'conn=2 tls target FAILED after 1\.000ms: certificate verify failed$' "$TMP/tls.txt" || fail "plain dump failed tls line"
"$MTRACE" stats --json "$TT" >"$TMP/tls_s.json" || fail "stats --json of the TLS trace exit $?"
jq -e '.tls.client | .handshakes == 2 and .failed == 0 and .resumed == 1 and .versions == {"TLSv1.3": 2} and .ciphers == {"TLS_AES_256_GCM_SHA384": 1, "TLS_AES_128_GCM_SHA256": 1} and .handshake_ms == {"count": 2, "mean": 3, "stdev_pct": 33.333333, "p50": 2, "p90": 4, "p99": 4, "max": 4}' \
    "$TMP/tls_s.json" >/dev/null || fail "stats tls.client: $(jq -c .tls.client "$TMP/tls_s.json")"
jq -e '.tls.target | .handshakes == 1 and .failed == 1 and .peer_cert == 1 and .peer_verified == 1 and .handshake_ms.max == 3' \
    "$TMP/tls_s.json" >/dev/null || fail "stats tls.target: $(jq -c .tls.target "$TMP/tls_s.json")"
# the same messages as without TLS records
jq -e '.messages.total == 212 and .latency_ms.find.p99 == 99' "$TMP/tls_s.json" >/dev/null || fail "TLS trace messages"
jq -e '.tls.client.handshakes == 0 and .tls.target.failed == 0 and .tls.client.handshake_ms.count == 0' "$TMP/s.json" >/dev/null ||
    fail "stats tls of a trace without TLS records: $(jq -c .tls "$TMP/s.json")"
"$MTRACE" stats "$TT" >"$TMP/tls_s.txt" || fail "stats of the TLS trace exit $?"
grep -Eq '^  client +2 +0 +3\.000 +2\.000 +4\.000 +4\.000 +0$' "$TMP/tls_s.txt" ||
    fail "plain stats tls client line: $(sed -n '/TLS handshakes/,/^$/p' "$TMP/tls_s.txt")"
grep -Eq '^  target +1 +1 ' "$TMP/tls_s.txt" || fail "plain stats tls target line"
! grep -q 'TLS handshakes' "$TMP/s.txt" || fail "plain stats of a trace without TLS records shows a TLS section"
# the independent reader decodes them from docs/trace-format.md 2.7
"$PYTHON" "$TOP/tests/integration/trace_indep.py" "$TT" >"$TMP/ti.json" || fail "independent reader, TLS trace"
jq -e '.types["7"] == 4 and .end.records == 222 and (.tls | map(.leg) == [0, 1, 0, 1]) and .tls[1].flags == 12 and .tls[1].sni == "db.example.net" and .tls[2].flags == 2 and .tls[3].flags == 1 and .tls[3].error == "certificate verify failed" and .tls[0].handshake_ns == 2000000' \
    "$TMP/ti.json" >/dev/null || fail "independent reader, tls records: $(jq -c .tls "$TMP/ti.json")"

# ---- a truncated trace: complete records first, then one error line, exit 1 ----
size=$(stat -c %s "$T")
head -c $((size / 2)) "$T" >"$TMP/trunc.zst"
"$MTRACE" dump --json "$TMP/trunc.zst" >"$TMP/tr.json" 2>"$TMP/tr.err"
st=$?
[ $st = 1 ] || fail "truncated dump exit $st, want 1"
grep -q 'truncated zstd frame at offset [0-9]*: [0-9]* bytes of an incomplete frame lost' "$TMP/tr.err" ||
    fail "truncated dump stderr: $(cat "$TMP/tr.err")"
jq -e . "$TMP/tr.json" >/dev/null || fail "truncated dump output is not JSON lines"
n=$(jq -s '[.[] | select(.type == "msg")] | length' "$TMP/tr.json")
[ "$n" -ge 6 ] && [ "$n" -lt 212 ] || fail "truncated dump printed $n messages"
"$MTRACE" stats --json "$TMP/trunc.zst" >"$TMP/ts.json" 2>"$TMP/ts.err"
st=$?
[ $st = 1 ] || fail "truncated stats exit $st, want 1"
jq -e '.complete == false and (.error | test("truncated"))' "$TMP/ts.json" >/dev/null || fail "truncated stats json"

# ---- a corrupt byte in the middle: reported, later frames still read ----
cp "$T" "$TMP/bad.zst"
printf '\xff\xff\xff\xff' | dd of="$TMP/bad.zst" bs=1 seek=$((size / 2)) conv=notrunc status=none
"$MTRACE" dump --json "$TMP/bad.zst" >"$TMP/b.json" 2>"$TMP/b.err"
st=$?
[ $st = 1 ] || fail "corrupt dump exit $st, want 1"
grep -q 'corrupt zstd frame' "$TMP/b.err" || fail "corrupt dump stderr: $(cat "$TMP/b.err")"
jqe 'select(.type == "end") | true' "$TMP/b.json" || fail "no resync after a corrupt frame"

# ---- usage and foreign files ----
"$MTRACE" dump --help | grep -q 'usage: mtrace dump' || fail "dump --help"
"$MTRACE" stats --help | grep -q 'usage: mtrace stats' || fail "stats --help"
"$MTRACE" dump 2>/dev/null; [ $? = 2 ] || fail "dump without a trace: want exit 2"
"$MTRACE" stats --bogus "$T" 2>/dev/null; [ $? = 2 ] || fail "stats --bogus: want exit 2"
"$MTRACE" dump "$T" "$T" 2>/dev/null; [ $? = 2 ] || fail "dump with two traces: want exit 2"
"$MTRACE" dump "$TMP/nonexistent.zst" 2>"$TMP/e.err"; [ $? = 1 ] || fail "missing file: want exit 1"
grep -q 'nonexistent.zst' "$TMP/e.err" || fail "missing file message"
printf 'hello, not a trace\n' >"$TMP/text.zst"
"$MTRACE" stats "$TMP/text.zst" 2>"$TMP/e.err"; [ $? = 1 ] || fail "text file: want exit 1"
grep -q 'not an mtrace trace' "$TMP/e.err" || fail "text file message: $(cat "$TMP/e.err")"
[ "$(wc -l <"$TMP/e.err")" = 1 ] || fail "error is not one line"
# a capture handed over instead of a trace says how to convert it: a real
# pcap (../shared/captures), and the first bytes of a pcapng file
printf '\x0a\x0d\x0d\x0a\x1c\x00\x00\x00\x4d\x3c\x2b\x1a' >"$TMP/x.pcapng"
for f in "$TOP/../shared/captures/deeptrace-mongo-msg.pcap" "$TMP/x.pcapng"; do
    [ -f "$f" ] || continue
    "$MTRACE" dump "$f" >/dev/null 2>"$TMP/e.err"; [ $? = 1 ] || fail "$f: want exit 1"
    grep -q "pcap/pcapng capture.*mtrace capture --pcap" "$TMP/e.err" || fail "$f: no advice: $(cat "$TMP/e.err")"
done

# ---- golden output of a frozen version-1 trace (tests/data/traces/README.md) ----
G=$TOP/tests/data/traces
"$MTRACE" dump "$G/v1_scenario.zst" 2>/dev/null | diff -u "$G/v1_scenario.dump.txt" - >"$TMP/g.diff" ||
    fail "dump of v1_scenario.zst differs from the golden file: $(head -20 "$TMP/g.diff")"
"$MTRACE" stats "$G/v1_scenario.zst" | sed 's|^trace .*(|trace       (|' | diff -u "$G/v1_scenario.stats.txt" - >"$TMP/g.diff" ||
    fail "stats of v1_scenario.zst differs from the golden file: $(head -20 "$TMP/g.diff")"

# ---- the shipped sample trace (traces/sample.zst), when present ----
if [ -f "$TOP/traces/sample.zst" ]; then
    "$MTRACE" dump --json "$TOP/traces/sample.zst" | jq -e . >/dev/null || fail "sample.zst dump"
    "$MTRACE" stats --json "$TOP/traces/sample.zst" | jq -e '.complete' >/dev/null || fail "sample.zst stats"
    # pymongo's recorded calls: one failed command (MockupDB's BadValue), and
    # --top's slowest exchanges, slowest first, each findable with dump
    "$MTRACE" stats --json --top 3 "$TOP/traces/sample.zst" >"$TMP/top.json" || fail "stats --top exit $?"
    jq -e '.failed_replies == [{"command":"fail_me","kind":"error","code":2,"codeName":"BadValue","replies":1}]
           and .by_command.fail_me.errors == 1 and .by_command.find.errors == 0
           and (.slowest | length) == 3 and .slowest[0].latency_ms >= .slowest[1].latency_ms
           and .slowest[1].latency_ms >= .slowest[2].latency_ms
           and .slowest[0].latency_ms == ([.latency_ms[].max] | max)' "$TMP/top.json" >/dev/null ||
        fail "stats --top / failed replies of sample.zst: $(jq -c '.failed_replies, .slowest' "$TMP/top.json")"
    c=$(jq '.slowest[0].conn' "$TMP/top.json"); r=$(jq '.slowest[0].request_id' "$TMP/top.json")
    "$MTRACE" dump --json "$TOP/traces/sample.zst" |
        jq -e -s --argjson c "$c" --argjson r "$r" 'any(.[]; .conn == $c and .request_id == $r and .dir == "c2s")' >/dev/null ||
        fail "the slowest exchange (conn $c, requestID $r) is not in dump"
    "$MTRACE" stats --top 0 "$T" 2>/dev/null; [ $? = 2 ] || fail "stats --top 0: want exit 2"
fi
# a damaged header frame (byte 8, inside the first zstd frame) loses the
# header record only: every record of the later frames is still dumped, exit 1,
# one line saying the header is lost (DESIGN rule 6)
python3 -c 'import sys; b = bytearray(open(sys.argv[1], "rb").read()); b[8] ^= 0xff; open(sys.argv[2], "wb").write(b)' \
    "$T" "$TMP/hdr.zst"
"$MTRACE" dump "$T" >"$TMP/full.txt" || fail "dump of the intact trace"
"$MTRACE" dump "$TMP/hdr.zst" >"$TMP/hdr.txt" 2>"$TMP/hdr.err"
st=$?
[ $st = 1 ] || fail "dump of a damaged header frame: exit $st, want 1"
grep -q "header record lost, resuming at offset" "$TMP/hdr.err" || fail "no header-lost message: $(cat "$TMP/hdr.err")"
[ "$(wc -l <"$TMP/hdr.txt")" = $(($(wc -l <"$TMP/full.txt") - 1)) ] ||
    fail "damaged header frame: $(wc -l <"$TMP/hdr.txt") lines, want all but the header's"
tail -n +2 "$TMP/full.txt" | cut -c14- >"$TMP/full.rest"
cut -c14- "$TMP/hdr.txt" >"$TMP/hdr.rest"
cmp -s "$TMP/full.rest" "$TMP/hdr.rest" || fail "damaged header frame: records differ"
"$MTRACE" stats --json "$TMP/hdr.zst" 2>/dev/null | jq -e '.messages.c2s == 107 and .messages.s2c == 105' >/dev/null ||
    fail "stats of a damaged header frame lost records"
"$MTRACE" stats "$TMP/hdr.zst" 2>/dev/null | head -1 | grep -q "(header lost" ||
    fail "stats of a damaged header frame does not say the header is lost"
echo "dump/stats: ok"
