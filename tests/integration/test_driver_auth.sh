#!/usr/bin/env bash
# test_driver_auth.sh -- a driver given credentials against `mtrace replay`.
# SCRAM answers depend on nonces both sides draw per connection, so no
# recorded conversation can match: the driver must get an authentication
# error that says so and what to do (connect without credentials), not a
# "no recorded reply" miss naming an unrelated command.  pymongo
# (SCRAM-SHA-1 for a 7.0 hello without saslSupportedMechs) and the Node.js
# driver (SCRAM-SHA-256); a client without credentials is served as usual.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replay_lib.sh"
[ -d "$TOP/tests/integration/node_modules/mongodb" ] ||
    fail "mongodb@6 missing: run tools/deps.sh --check-or-install"

start_replay REP "$TOP/traces/sample.zst"
py=$("$PYTHON" - "$REP" <<'PYEOF'
import sys
from pymongo import MongoClient
from pymongo.errors import OperationFailure
c = MongoClient("mongodb://u:p@127.0.0.1:%s/" % sys.argv[1], serverSelectionTimeoutMS=5000)
try:
    c.benchmark_db.test_col.find_one({"_id": "test-doc-1"})
    print("no error")
except OperationFailure as e:
    print("code", e.code, e.details.get("codeName"), e.details.get("errmsg"))
print("plain", MongoClient("mongodb://127.0.0.1:%s/" % sys.argv[1]).benchmark_db.test_col.find_one({"_id": "test-doc-1"}))
PYEOF
)
echo "pymongo: $py"
grep -q "^code 18 AuthenticationFailed .*without credentials" <<<"$py" || fail "pymongo with credentials: $py"
grep -q "^plain {'_id': 'test-doc-1', 'value': 42}" <<<"$py" || fail "pymongo without credentials: $py"
node=$(cd "$TOP/tests/integration" && node -e '
const { MongoClient } = require("./node_modules/mongodb");
(async () => {
  const c = new MongoClient(`mongodb://u:p@127.0.0.1:${process.argv[1]}/`, { serverSelectionTimeoutMS: 5000 });
  try { await c.db("benchmark_db").collection("test_col").findOne({ _id: "test-doc-1" }); console.log("no error"); }
  catch (e) { console.log("code", e.code, e.codeName, e.message); }
  await c.close();
})();' "$REP")
echo "node: $node"
grep -q "^code 18 AuthenticationFailed .*without credentials" <<<"$node" || fail "node with credentials: $node"
stop_wait $REPLAY_PID || fail "replay exited $?"
grep -q "missed 2," "$TMP/replay.$REP.log" || fail "replay summary: $(grep requests "$TMP/replay.$REP.log")"
grep -q "miss #1: mtrace replay cannot authenticate" "$TMP/replay.$REP.log" ||
    fail "replay log: $(grep miss "$TMP/replay.$REP.log")"
echo "ok: credentials against replay get AuthenticationFailed (18) saying to connect without them"
