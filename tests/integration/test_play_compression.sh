#!/usr/bin/env bash
# test_play_compression.sh -- OP_COMPRESSED traffic through `mtrace play`.
# For each of snappy, zlib and zstd: pymongo with compressors=C records its
# workload through `mtrace capture` to `mtrace replay` (which agrees to
# C), so the trace holds OP_COMPRESSED requests; play sends that trace to
# a replay of the same base trace: its hello offers what the recorded hello
# offered, the server agrees to C, and every request recorded compressed is
# sent compressed with C (the -o trace says so), every one answered, 0
# misses; replay's summary counts compressed replies.  Then the same trace
# to a server that agrees to no compressor (MockupDB): sent plain, all
# answered.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replay_lib.sh"
WL=$TOP/tests/integration/replay_workload.py

start_mock MOCK
start_capture CAP "$MOCK" "$TMP/base.zst"
"$PYTHON" "$WL" "mongodb://127.0.0.1:$CAP/" >/dev/null || fail "base workload failed"
stop_wait $CAPTURE_PID || fail "capture exited $?"
start_replay REP "$TMP/base.zst" --compressors snappy,zlib,zstd

for c in snappy zlib zstd; do
    start_capture CAPC "$REP" "$TMP/$c.zst"
    "$PYTHON" "$WL" "mongodb://127.0.0.1:$CAPC/?compressors=$c" >/dev/null ||
        fail "$c workload through capture to replay failed"
    stop_wait $CAPTURE_PID || fail "capture exited $?"
    "$MTRACE" dump --json "$TMP/$c.zst" >"$TMP/$c.json"
    nrec=$(grep '"dir":"c2s"' "$TMP/$c.json" | grep -c "\"compressed\":\"$c\"")
    [ "$nrec" -ge 10 ] || fail "$c: only $nrec compressed requests recorded"

    "$MTRACE" play "$TMP/$c.zst" --target 127.0.0.1:"$REP" --max-speed -o "$TMP/$c.played.zst" \
        >"$TMP/play.$c" 2>"$TMP/play.$c.err" || fail "$c: play exited $?: $(cat "$TMP/play.$c.err")"
    grep -Eq ' 0 unanswered, 0 not sent' "$TMP/play.$c" || fail "$c: $(head -1 "$TMP/play.$c")"
    "$MTRACE" dump --json "$TMP/$c.played.zst" >"$TMP/$c.played.json"
    nplay=$(grep '"dir":"c2s"' "$TMP/$c.played.json" | grep -c "\"compressed\":\"$c\"")
    nrech=$(grep '"dir":"c2s"' "$TMP/$c.json" | grep "\"compressed\":\"$c\"" |
        grep -Evc '"cmd":"(hello|isMaster|ismaster|saslStart|saslContinue)"')
    [ "$nplay" -eq "$nrech" ] || fail "$c: $nplay requests sent compressed, $nrech recorded so"
    grep '"dir":"c2s"' "$TMP/$c.played.json" | grep '"cmd":"hello"' | grep -q "\"compression\" : \\[ \"$c\"" ||
        fail "$c: play's hello does not offer $c"
    echo "ok: $c: $nplay requests re-sent compressed with $c; $(head -1 "$TMP/play.$c" | cut -d: -f2-)"
done
stop_wait $REPLAY_PID
log=$TMP/replay.$REP.log
grep -q "missed 0," "$log" || fail "replay saw misses: $(grep requests "$log")"
grep -Eq "compressed replies [1-9]" "$log" || fail "replay sent no compressed reply: $(grep requests "$log")"

"$MTRACE" play "$TMP/zstd.zst" --target 127.0.0.1:"$MOCK" --max-speed -o "$TMP/plain.zst" \
    >"$TMP/play.plain" 2>"$TMP/play.plain.err" || fail "plain: play exited $?: $(cat "$TMP/play.plain.err")"
grep -Eq ' 0 unanswered, 0 not sent' "$TMP/play.plain" || fail "plain: $(head -1 "$TMP/play.plain")"
n=$("$MTRACE" dump --json "$TMP/plain.zst" | grep -c '"compressed":"')
[ "$n" -eq 0 ] || fail "$n messages compressed with a server that agreed to none"
echo "ok: compressed trace to a server without compression: sent plain"
