#!/usr/bin/env bash
# test_driver_bigdoc.sh -- large requests from real drivers, captured and
# replayed: pymongo inserts an 8 MiB document, an insert_many of 3 x 15 MiB
# (messages near maxMessageSizeBytes) and a 4 MiB update; the Node.js driver
# an 8 MiB document.  Replay of the trace must give each driver what
# MockupDB gave it (no error: the trace holds these exchanges), and its
# summary must account for every request (requests = matched + built-in +
# hello + missed).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replay_lib.sh"
[ -d "$TOP/tests/integration/node_modules/mongodb" ] ||
    fail "mongodb@6 missing: run tools/deps.sh --check-or-install"
PY=$TOP/tests/integration/driver_bigdoc.py
NODE_BIG='
const { MongoClient } = require(process.cwd() + "/node_modules/mongodb");
(async () => {
  const c = new MongoClient(process.argv[1], { serverSelectionTimeoutMS: 5000 });
  const col = c.db("benchmark_db").collection("test_col");
  let out;
  try { out = { call: "node_doc_8mb", ok: (await col.insertOne({ _id: "nbig", pad: "q".repeat(8 << 20) })).acknowledged }; }
  catch (e) { out = { call: "node_doc_8mb", error: e.name, msg: String(e.message).slice(0, 200) }; }
  console.log(JSON.stringify(out));
  await c.close();
})();'

workload() {
    "$PYTHON" "$PY" "mongodb://127.0.0.1:$1/" || fail "pymongo workload exited $?"
    (cd "$TOP/tests/integration" && node -e "$NODE_BIG" "mongodb://127.0.0.1:$1/") ||
        fail "node workload exited $?"
}

start_mock MOCK
start_capture CAP "$MOCK" "$TMP/big.zst"
workload "$CAP" >"$TMP/capture.out"
stop_wait $CAPTURE_PID || fail "capture exited $?"
grep -q '"error"' "$TMP/capture.out" && fail "MockupDB refused a call: $(cat "$TMP/capture.out")"
[ "$(wc -l <"$TMP/capture.out")" -eq 5 ] || fail "capture run: $(cat "$TMP/capture.out")"

# dump names the kind-1 sequences and their document counts: pymongo put
# the 3 x 15 MiB documents in one message just under maxMessageSizeBytes
"$MTRACE" dump "$TMP/big.zst" >"$TMP/big.txt" || fail "dump failed"
grep -Eq "c2s OP_MSG .* insert db=benchmark_db coll=test_col seq=documents:3 len=4[0-7][0-9]{6} " "$TMP/big.txt" ||
    fail "dump: no 3-document insert near 48 MB: $(grep insert "$TMP/big.txt")"

start_replay REP "$TMP/big.zst" --summary-json "$TMP/sum.json"
workload "$REP" >"$TMP/replay.out"
stop_wait $REPLAY_PID || fail "replay exited $?"
same_lines "$TMP/capture.out" "$TMP/replay.out"
grep -q " 0 skipped)" "$TMP/replay.$REP.log" || fail "replay skipped exchanges: $(cat "$TMP/replay.$REP.log")"
"$PYTHON" - "$TMP/sum.json" <<'PYEOF' || fail "summary does not add up: $(cat "$TMP/sum.json")"
import json, sys
s = json.load(open(sys.argv[1]))
parts = s["matched"] + s["builtin"] + s["hello"] + s["missed"] + s["unacknowledged"]
print("requests %d: matched %d builtin %d hello %d missed %d" %
      (s["requests"], s["matched"], s["builtin"], s["hello"], s["missed"]))
sys.exit(0 if parts == s["requests"] and s["missed"] == 0 else 1)
PYEOF
echo "ok: $(wc -l <"$TMP/capture.out") large-request calls (pymongo, node) replayed as recorded"
