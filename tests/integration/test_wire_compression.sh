#!/usr/bin/env bash
# test_wire_compression.sh -- real drivers against tests/helpers/wire_peer,
# a server made only of core/wire: the drivers negotiate OP_COMPRESSED, so
# core/wire must decompress what each driver's compressor produced, find the
# command by its top-level walk, and encode (and compress) replies that the
# driver accepts.  libmongoc with snappy, zlib and zstd; pymongo 3.11 and
# the Node.js driver with zlib (their snappy/zstd need extra modules).
# Each find reply says which compressor carried the request ("via").
. "$(dirname "$0")/lib.sh"
PEER=$TOP/${BUILD:-build/release}/helpers/wire_peer
MC=$TOP/${BUILD:-build/release}/helpers/wire_mongoc_compress
[ -x "$PEER" ] && [ -x "$MC" ] || fail "wire_peer / wire_mongoc_compress not built (make helpers)"

"$PEER" >"$TMP/peer.log" 2>&1 &
track_pid $!
for ((i = 0; i < 100; i++)); do grep -q READY "$TMP/peer.log" && break; sleep 0.05; done
PORT=$(awk '/READY/ {print $2}' "$TMP/peer.log")
[ -n "$PORT" ] || fail "wire_peer did not start: $(cat "$TMP/peer.log")"

for c in snappy zlib zstd; do
    "$MC" "$PORT" "$c" >"$TMP/mongoc.$c" 2>&1 ||
        fail "libmongoc with $c: $(cat "$TMP/mongoc.$c")"
    grep -q "find via: $c" "$TMP/mongoc.$c" || fail "libmongoc $c: $(cat "$TMP/mongoc.$c")"
    grep -q "insertedCount: 3" "$TMP/mongoc.$c" || fail "libmongoc $c insert: $(cat "$TMP/mongoc.$c")"
done
"$PYTHON" "$TOP/tests/integration/wire_compress_client.py" "$PORT" zlib >"$TMP/py" 2>&1 ||
    fail "pymongo with zlib: $(cat "$TMP/py")"
if [ -d "$TOP/tests/integration/node_modules/mongodb" ]; then
    (cd "$TOP/tests/integration" && node wire_compress_client.js "$PORT" zlib) >"$TMP/node" 2>&1 ||
        fail "node with zlib: $(cat "$TMP/node")"
else
    fail "mongodb@6 missing: run tools/deps.sh --check-or-install"
fi

# The server saw each compressor on the commands that follow the handshake,
# the inserts arrived as kind-1 sequences (libmongoc, pymongo) or in the
# body (node), and no message was refused.
grep -q '^ERR' "$TMP/peer.log" && fail "wire_peer refused a message: $(grep '^ERR' "$TMP/peer.log")"
for c in snappy zlib zstd; do
    n=$(grep -c "op=OP_COMPRESSED/$c inner=OP_MSG cmd=find" "$TMP/peer.log")
    [ "$n" -ge 1 ] || fail "no find compressed with $c in: $(cat "$TMP/peer.log")"
done
grep -q "op=OP_COMPRESSED/zlib inner=OP_MSG cmd=insert db=wire_db coll=wire_col nseq=1" "$TMP/peer.log" ||
    fail "no compressed insert with a document sequence"
hellos=$(grep -c "cmd=isMaster\|cmd=hello\|cmd=ismaster" "$TMP/peer.log")
[ "$hellos" -ge 5 ] || fail "expected a handshake per client, saw $hellos"
echo "ok: $(grep -c '^REQ' "$TMP/peer.log") requests, $(grep -c 'OP_COMPRESSED' "$TMP/peer.log") compressed (snappy, zlib, zstd), from libmongoc, pymongo and node"
