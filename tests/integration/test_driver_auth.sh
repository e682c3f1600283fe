#!/usr/bin/env bash
# test_driver_auth.sh -- a driver given credentials against `mtrace replay`
# started WITHOUT --credentials.  Replay then does not authenticate (a
# recorded SCRAM conversation can never match: both sides draw nonces per
# connection): the driver must get an authentication error that says what
# to do (start replay with --credentials, or connect without credentials),
# not a "no recorded reply" miss naming an unrelated command; it is
# counted as a failed authentication, not as a miss.  pymongo and the
# Node.js driver; a client without credentials is served as usual.
# (Replay WITH --credentials: test_replay_scram.sh.)
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
grep -q "^code 18 AuthenticationFailed .*start it with --credentials USER:PASSWORD.*connect without credentials" <<<"$py" || fail "pymongo with credentials: $py"
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
grep -q "^code 18 AuthenticationFailed .*start it with --credentials USER:PASSWORD.*connect without credentials" <<<"$node" || fail "node with credentials: $node"
stop_wait $REPLAY_PID || fail "replay exited $?"
grep -q "missed 0," "$TMP/replay.$REP.log" || fail "replay summary: $(grep requests "$TMP/replay.$REP.log")"
grep -q "authentication: 0 succeeded (0 begun in hello), 2 failed" "$TMP/replay.$REP.log" ||
    fail "replay summary: $(grep authentication: "$TMP/replay.$REP.log")"
grep -q "authentication failed: saslStart refused: no --credentials" "$TMP/replay.$REP.log" ||
    fail "replay log: $(grep -i auth "$TMP/replay.$REP.log")"
echo "ok: credentials against replay without --credentials get AuthenticationFailed (18) naming --credentials"
