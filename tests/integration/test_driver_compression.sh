#!/usr/bin/env bash
# test_driver_compression.sh -- OP_COMPRESSED from real drivers, recorded
# and replayed.  libmongoc (snappy, zlib, zstd), pymongo 3.11 (zlib, zstd,
# snappy: python3-zstandard, python3-snappy) and the Node.js driver (zlib,
# snappy: npm snappy@7; zstd: npm @mongodb-js/zstd@2, its addon built by
# tools/deps.sh) talk through `mtrace capture` to
# tests/helpers/wire_peer, which agrees on the client's compressor and
# compresses its replies.  Then the same clients, in the same order, talk
# to `mtrace replay` of that trace through a second capture proxy:
#  - every client gets its answers (each client checks that the find reply
#    is the one recorded for its compressor, "via");
#  - replay agrees on the compressor (its hello reply lists it) and answers
#    each compressed request compressed with the request's compressor, as
#    mongod does and as the recorded server did;
#  - `mtrace dump` shows the compressor of every recorded message and its
#    decompressed command.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replay_lib.sh"
PEER=$TOP/${BUILD:-build/release}/helpers/wire_peer
MC=$TOP/${BUILD:-build/release}/helpers/wire_mongoc_compress
[ -x "$PEER" ] && [ -x "$MC" ] || fail "wire_peer / wire_mongoc_compress not built (make helpers)"
NM=$TOP/tests/integration/node_modules
[ -d "$NM/mongodb" ] && [ -d "$NM/snappy" ] && [ -f "$NM/@mongodb-js/zstd/build/Release/zstd.node" ] ||
    fail "mongodb@6 / snappy / @mongodb-js/zstd (built) missing in tests/integration/node_modules: run tools/deps.sh"
"$PYTHON" -c 'import zstandard, snappy' 2>/dev/null ||
    fail "python3-zstandard / python3-snappy missing: run tools/deps.sh --check-or-install"

clients() { # PORT: every client, one after the other
    local c
    for c in snappy zlib zstd; do
        "$MC" "$1" "$c" >"$TMP/mc.$c.$1" 2>&1 || fail "libmongoc $c on port $1: $(cat "$TMP/mc.$c.$1")"
    done
    for c in zlib zstd snappy; do
        "$PYTHON" "$TOP/tests/integration/wire_compress_client.py" "$1" "$c" >"$TMP/py.$c.$1" 2>&1 ||
            fail "pymongo $c on port $1: $(cat "$TMP/py.$c.$1")"
    done
    for c in zlib snappy zstd; do
        (cd "$TOP/tests/integration" && node wire_compress_client.js "$1" $c) >"$TMP/node.$c.$1" 2>&1 ||
            fail "node $c on port $1: $(cat "$TMP/node.$c.$1")"
    done
}

"$PEER" >"$TMP/peer.log" 2>&1 &
track_pid $!
for ((i = 0; i < 100; i++)); do grep -q READY "$TMP/peer.log" && break; sleep 0.05; done
PEER_PORT=$(awk '/READY/ {print $2}' "$TMP/peer.log")
[ -n "$PEER_PORT" ] || fail "wire_peer did not start: $(cat "$TMP/peer.log")"

start_capture CAP "$PEER_PORT" "$TMP/rec.zst"
clients "$CAP"
stop_wait $CAPTURE_PID || fail "capture exited $?"

# what dump says of the recording: every compressor, decompressed commands
"$MTRACE" dump --json "$TMP/rec.zst" >"$TMP/rec.json" || fail "dump failed"
for c in snappy zlib zstd; do
    n=$(jq -c "select(.type==\"msg\" and .compressed==\"$c\" and .cmd==\"find\")" "$TMP/rec.json" | wc -l)
    [ "$n" -ge 2 ] || fail "dump: $n find messages (request+reply) compressed with $c"
done
jq -e 'select(.type=="msg" and .compressed!=null and (.trace_flags|index("malformed")))' \
    "$TMP/rec.json" >/dev/null && fail "dump: a compressed message was not decompressed"
# stats: compressed messages per compressor, the same counts as dump's
for c in snappy zlib zstd; do
    d=$(jq -c "select(.type==\"msg\" and .compressed==\"$c\")" "$TMP/rec.json" | wc -l)
    s=$("$MTRACE" stats --json "$TMP/rec.zst" | jq ".messages.compressors.$c")
    [ "$d" -gt 0 ] && [ "$s" = "$d" ] || fail "stats: $c $s messages, dump $d"
done
"$MTRACE" stats "$TMP/rec.zst" | grep -q "compressed (snappy [0-9]*, zlib [0-9]*, zstd [0-9]*)" ||
    fail "stats text: $("$MTRACE" stats "$TMP/rec.zst" | grep messages)"

start_replay REP "$TMP/rec.zst"
start_capture CAP2 "$REP" "$TMP/rep.zst"
clients "$CAP2"
stop_wait $CAPTURE_PID || fail "capture in front of replay exited $?"
stop_wait $REPLAY_PID || fail "replay exited $?"

# every compressed request got a reply compressed with its compressor; the
# hello replies agreed on one
"$MTRACE" dump --json "$TMP/rep.zst" >"$TMP/rep.json" || fail "dump failed"
"$PYTHON" - "$TMP/rep.json" <<'PYEOF' || fail "replay's compression: see above"
import json, sys
msgs = [json.loads(l) for l in open(sys.argv[1])]
msgs = [m for m in msgs if m.get("type") == "msg"]
req = {(m["conn"], m["request_id"]): m for m in msgs if m["dir"] == "c2s"}
seen, bad = {}, []
for m in msgs:
    if m["dir"] != "s2c":
        continue
    q = req.get((m["conn"], m["response_to"]))
    if q is None:
        continue
    if q["compressed"] is not None:
        seen[q["compressed"]] = seen.get(q["compressed"], 0) + 1
        if m["compressed"] != q["compressed"]:
            bad.append("conn %d %s: request %s, reply %s" %
                       (m["conn"], q["cmd"], q["compressed"], m["compressed"]))
print("compressed requests answered per compressor:", seen)
for b in bad[:10]:
    print("  reply not compressed like its request:", b)
ok = not bad and all(seen.get(c, 0) >= 2 for c in ("snappy", "zlib", "zstd"))
sys.exit(0 if ok else 1)
PYEOF
# --compressors none: the same trace replayed without compression; a bad
# value is a usage error naming the option
out=$("$MTRACE" replay --compressors lz4 "$TMP/rec.zst" 2>&1)
[ $? -eq 2 ] && grep -q -- "--compressors 'lz4'" <<<"$out" || fail "--compressors lz4: $out"
start_replay REP "$TMP/rec.zst" --compressors none
start_capture CAP2 "$REP" "$TMP/none.zst"
"$PYTHON" "$TOP/tests/integration/wire_compress_client.py" "$CAP2" zstd >"$TMP/none.py" 2>&1
stop_wait $CAPTURE_PID || fail "capture in front of replay exited $?"
stop_wait $REPLAY_PID || fail "replay exited $?"
n=$("$MTRACE" dump --json "$TMP/none.zst" | jq -c 'select(.type=="msg" and .compressed!=null)' | wc -l)
[ "$n" -eq 0 ] || fail "--compressors none: $n compressed messages"
grep -q "^ping: 1" "$TMP/none.py" || fail "pymongo against --compressors none: $(cat "$TMP/none.py")"

echo "ok: libmongoc, pymongo and node compressed (snappy, zlib, zstd) through capture and replay"
