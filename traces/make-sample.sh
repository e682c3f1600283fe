#!/usr/bin/env bash
# make-sample.sh -- regenerate traces/sample.zst: MockupDB
# (tests/integration/mockmongo.py) as the upstream, `mtrace capture` as the
# proxy, pymongo (/usr/bin/python3) as the client running the seed-000
# workload (replace_one upsert of {_id: "test-doc-1", value: 42}, then
# find_one by _id: 10 sequential calls and 2 threads x 5 calls), a
# multi-batch cursor over benchmark_db.many (batch_size 100), an insert_one
# and one failing command (fail_me).  See traces/README.md.
#
#     traces/make-sample.sh [OUT]     (default traces/sample.zst; run from
#                                      anywhere, after `make`)
set -eu
TOP=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$TOP/traces/sample.zst}
MTRACE=${MTRACE:-$TOP/mtrace}
PY=/usr/bin/python3
TMP=$(mktemp -d /tmp/mtrace-sample.XXXXXX)
MOCK="" CAP=""
cleanup() {
    [ -n "$CAP" ] && kill "$CAP" 2>/dev/null
    [ -n "$MOCK" ] && kill "$MOCK" 2>/dev/null
    wait 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT

"$PY" "$TOP/tests/integration/mockmongo.py" --port 0 >"$TMP/mock.out" 2>"$TMP/mock.err" &
MOCK=$!
for ((i = 0; i < 200; i++)); do grep -q READY "$TMP/mock.out" && break; sleep 0.05; done
UP=$(awk '/READY/ {print $2}' "$TMP/mock.out")
[ -n "$UP" ] || { cat "$TMP/mock.err" >&2; echo "make-sample: mockmongo did not start" >&2; exit 1; }

"$MTRACE" capture --listen 127.0.0.1:0 --target 127.0.0.1:"$UP" -o "$TMP/sample.zst" \
    2>"$TMP/cap.err" &
CAP=$!
for ((i = 0; i < 200; i++)); do grep -q "listening on" "$TMP/cap.err" && break; sleep 0.05; done
PORT=$(grep -o 'listening on 127.0.0.1:[0-9]*' "$TMP/cap.err" | cut -d: -f2)
[ -n "$PORT" ] || { cat "$TMP/cap.err" >&2; exit 1; }

"$PY" - "$PORT" <<'PY'
import sys
import threading
from pymongo import MongoClient
from pymongo.errors import OperationFailure

client = MongoClient("mongodb://127.0.0.1:%s/?directConnection=true" % sys.argv[1],
                     serverSelectionTimeoutMS=5000)
col = client["benchmark_db"]["test_col"]
doc_id = "test-doc-1"
col.replace_one({"_id": doc_id}, {"_id": doc_id, "value": 42}, upsert=True)
for _ in range(10):
    assert col.find_one({"_id": doc_id}) == {"_id": doc_id, "value": 42}

def worker():
    for _ in range(5):
        assert col.find_one({"_id": doc_id}) == {"_id": doc_id, "value": 42}

threads = [threading.Thread(target=worker) for _ in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
assert len(list(client["benchmark_db"]["many"].find().batch_size(100))) == 250
assert client["benchmark_db"]["test_col"].insert_one({"value": 7}).acknowledged
try:
    client["benchmark_db"].command("fail_me")
    raise SystemExit("fail_me succeeded")
except OperationFailure as e:
    assert e.code == 2
client.close()
PY

kill -TERM "$CAP"
wait "$CAP"
CAP=""
cat "$TMP/cap.err" >&2
mv -f "$TMP/sample.zst" "$OUT"
chmod 0644 "$OUT" # a sample ships with the tool: no credentials in it
echo "make-sample: wrote $OUT ($(stat -c %s "$OUT") bytes)" >&2
