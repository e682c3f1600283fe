#!/usr/bin/env bash
# test_replay_scram.sh -- `mtrace replay --credentials`: real drivers
# authenticate against replay as against mongod --auth, then run their
# workload from the trace.
#  1. pymongo's workload recorded (through `mtrace capture` to MockupDB),
#     replayed with --credentials: pymongo with credentials (mechanism
#     negotiated, and authMechanism=SCRAM-SHA-1 / SCRAM-SHA-256) gets the
#     recorded documents; a password with ':' and a user with ',' '=' '@'
#     (SCRAM escapes =2C / =3D) work; a non-ASCII password works with both
#     mechanisms, and one that SASLprep changes ("I<U+00AD>X" given, "IX"
#     configured) with SCRAM-SHA-256 only, as against mongod; a wrong
#     password gets
#     OperationFailure 18, no credentials Unauthorized 13 on the first
#     command; --auth-source puts the users in another database;
#  2. the Node.js driver (mongodb@6): its recorded workload with
#     credentials, and a wrong password (18);
#  3. libmongoc (tests/helpers/mongoc_workload): the same, and a wrong
#     password;
#  4. a trace recorded from an authenticating application (pymongo with
#     credentials through `mtrace capture` to the replay of step 1): its
#     saslStart/saslContinue exchanges are never served, not counted as
#     misses (--strict passes), and said so at start;
#  5. the summary and --summary-json count authentications; bad options
#     (no colon, a password SASLprep prohibits, --auth-source alone, too few
#     iterations) exit 2 with one line.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replay_lib.sh"
WL=$TOP/tests/integration/replay_workload.py
NODEWL=$TOP/tests/integration/replay_workload.js
MWL=$TOP/${BUILD:-build/release}/helpers/mongoc_workload
[ -x "$MWL" ] || fail "$MWL not built (make helpers)"
[ -d "$TOP/tests/integration/node_modules/mongodb" ] ||
    fail "mongodb@6 missing: run tools/deps.sh --check-or-install"
CREDS=(--credentials 'app:pa:ss' --credentials 'we,ird=u@x:s3cret'
       --credentials 'uni:p'$'\xc3\xa4''ssw'$'\xc3\xb6''rd' --credentials 'hy:IX')
APP='app:pa%3Ass'

# ---- 1. pymongo ----
start_mock MOCK
start_capture CAP "$MOCK" "$TMP/py.zst"
"$PYTHON" "$WL" "mongodb://127.0.0.1:$CAP/" >"$TMP/py.capture" ||
    fail "pymongo workload failed through capture"
stop_wait $CAPTURE_PID || fail "capture exited $?"

start_replay REP "$TMP/py.zst" "${CREDS[@]}" --summary-json "$TMP/sum.json"
REP_PID=$REPLAY_PID
for mech in "" "?authMechanism=SCRAM-SHA-1" "?authMechanism=SCRAM-SHA-256"; do
    "$PYTHON" "$WL" "mongodb://$APP@127.0.0.1:$REP/$mech" >"$TMP/py.replay" ||
        fail "pymongo workload with credentials ($mech) failed against replay"
    same_lines "$TMP/py.capture" "$TMP/py.replay"
done
py=$("$PYTHON" - "$REP" <<'PYEOF'
import sys
from pymongo import MongoClient
from pymongo.errors import OperationFailure
port = sys.argv[1]
def one(uri):
    c = MongoClient(uri % port, serverSelectionTimeoutMS=5000)
    try:
        return repr(c.benchmark_db.test_col.find_one({"_id": "test-doc-1"}))
    except OperationFailure as e:
        return "code %s %s %s" % (e.code, e.details.get("codeName"), e.details.get("errmsg"))
    finally:
        c.close()
print("weird", one("mongodb://we%%2Cird%%3Du%%40x:s3cret@127.0.0.1:%s/"))
print("weird1", one("mongodb://we%%2Cird%%3Du%%40x:s3cret@127.0.0.1:%s/?authMechanism=SCRAM-SHA-1"))
from urllib.parse import quote
uni = quote("p\u00e4ssw\u00f6rd").replace("%", "%%")
print("uni", one("mongodb://uni:" + uni + "@127.0.0.1:%s/"))
print("uni1", one("mongodb://uni:" + uni + "@127.0.0.1:%s/?authMechanism=SCRAM-SHA-1"))
# "I<SOFT HYPHEN>X" SASLprep's to "IX": SCRAM-SHA-256 logs in, SCRAM-SHA-1
# (the digest of the raw password) does not: as against mongod
hy = quote("I\u00adX").replace("%", "%%")
print("hy256", one("mongodb://hy:" + hy + "@127.0.0.1:%s/?authMechanism=SCRAM-SHA-256"))
print("hy1", one("mongodb://hy:" + hy + "@127.0.0.1:%s/?authMechanism=SCRAM-SHA-1"))
print("wrong", one("mongodb://app:pa%%3Asx@127.0.0.1:%s/"))
print("wrong1", one("mongodb://app:pass@127.0.0.1:%s/?authMechanism=SCRAM-SHA-1"))
print("nouser", one("mongodb://nobody:pa%%3Ass@127.0.0.1:%s/"))
print("otherdb", one("mongodb://app:pa%%3Ass@127.0.0.1:%s/?authSource=benchmark_db"))
print("none", one("mongodb://127.0.0.1:%s/"))
PYEOF
)
echo "$py"
want() { grep -qx -- "$1" <<<"$py" || fail "pymongo: expected '$1' in: $py"; }
want "weird {'_id': 'test-doc-1', 'value': 42}"
want "weird1 {'_id': 'test-doc-1', 'value': 42}"
want "uni {'_id': 'test-doc-1', 'value': 42}"
want "uni1 {'_id': 'test-doc-1', 'value': 42}"
want "hy256 {'_id': 'test-doc-1', 'value': 42}"
for k in hy1 wrong wrong1 nouser otherdb; do
    want "$k code 18 AuthenticationFailed Authentication failed."
done
want "none code 13 Unauthorized command find requires authentication"

# ---- 2. the Node.js driver ----
start_capture CAP "$MOCK" "$TMP/node.zst"
node "$NODEWL" "mongodb://127.0.0.1:$CAP/" >"$TMP/node.capture" ||
    fail "node workload failed through capture"
stop_wait $CAPTURE_PID || fail "capture exited $?"
start_replay NREP "$TMP/node.zst" "${CREDS[@]}"
node "$NODEWL" "mongodb://$APP@127.0.0.1:$NREP/" >"$TMP/node.replay" ||
    fail "node workload with credentials failed against replay"
same_lines "$TMP/node.capture" "$TMP/node.replay"
node=$(cd "$TOP/tests/integration" && node -e '
const { MongoClient } = require("./node_modules/mongodb");
(async () => {
  for (const [k, u] of [["wrong", "mongodb://app:nope@127.0.0.1:PORT/"],
                        ["sha1", "mongodb://app:pa%3Ass@127.0.0.1:PORT/?authMechanism=SCRAM-SHA-1"],
                        ["none", "mongodb://127.0.0.1:PORT/"]]) {
    const c = new MongoClient(u.replace("PORT", process.argv[1]), { serverSelectionTimeoutMS: 5000 });
    try { const d = await c.db("benchmark_db").collection("test_col").findOne({ _id: "test-doc-1" });
          console.log(k, "ok", JSON.stringify(d)); }
    catch (e) { console.log(k, "code", e.code, e.codeName, e.message); }
    await c.close();
  }
})();' "$NREP")
echo "$node"
grep -qx 'wrong code 18 AuthenticationFailed Authentication failed.' <<<"$node" || fail "node wrong password: $node"
grep -q '^sha1 ok ' <<<"$node" || fail "node SCRAM-SHA-1: $node"
grep -qx 'none code 13 Unauthorized command find requires authentication' <<<"$node" || fail "node without credentials: $node"
stop_wait $REPLAY_PID || fail "node replay exited $?"

# ---- 3. libmongoc ----
start_capture CAP "$MOCK" "$TMP/c.zst"
"$MWL" "mongodb://127.0.0.1:$CAP/?serverSelectionTimeoutMS=5000" >"$TMP/c.capture" ||
    fail "mongoc workload failed through capture"
stop_wait $CAPTURE_PID || fail "capture exited $?"
start_replay MREP "$TMP/c.zst" "${CREDS[@]}"
"$MWL" "mongodb://$APP@127.0.0.1:$MREP/?serverSelectionTimeoutMS=5000" >"$TMP/c.replay" ||
    fail "mongoc workload with credentials failed against replay"
same_lines "$TMP/c.capture" "$TMP/c.replay"
"$MWL" "mongodb://app:bad@127.0.0.1:$MREP/?serverSelectionTimeoutMS=5000" >"$TMP/c.wrong" ||
    fail "mongoc workload with a wrong password did not run"
# every call fails: MONGOC_ERROR_CLIENT (1) / MONGOC_ERROR_CLIENT_AUTHENTICATE
# (11); libmongoc's own log lines ("Authentication failed") are left aside
n=$(grep -c '^{"call"' "$TMP/c.wrong")
[ "$n" -ge 3 ] && [ "$(grep -c '"error": 11, "domain": 1}' "$TMP/c.wrong")" = "$n" ] ||
    fail "mongoc wrong password: $(head -3 "$TMP/c.wrong")"
stop_wait $REPLAY_PID || fail "mongoc replay exited $?"
grep -q "authentication failed: wrong password: SCRAM proof mismatch" "$TMP/replay.$MREP.log" ||
    fail "mongoc: no wrong-password log line: $(grep -i auth "$TMP/replay.$MREP.log")"

# ---- 4. a trace of an authenticating application ----
start_capture CAP "$REP" "$TMP/auth.zst"
"$PYTHON" "$WL" "mongodb://$APP@127.0.0.1:$CAP/" >"$TMP/auth.capture" ||
    fail "pymongo with credentials failed through capture to replay"
stop_wait $CAPTURE_PID || fail "capture exited $?"
same_lines "$TMP/py.capture" "$TMP/auth.capture"
[ "$("$MTRACE" dump --json "$TMP/auth.zst" 2>/dev/null | grep -c '"auth":true')" -ge 2 ] ||
    fail "the recorded trace has no authentication exchange"
start_replay AREP "$TMP/auth.zst" --strict --credentials 'app:pa:ss'
"$PYTHON" "$WL" "mongodb://$APP@127.0.0.1:$AREP/" >"$TMP/auth.replay" ||
    fail "pymongo with credentials failed against the authenticated trace"
same_lines "$TMP/py.capture" "$TMP/auth.replay"
stop_wait $REPLAY_PID || fail "--strict replay of the authenticated trace exited $?: $(grep requests "$TMP/replay.$AREP.log")"
log=$TMP/replay.$AREP.log
grep -q "recorded authentication exchanges (saslStart, saslContinue, ...) are never served" "$log" ||
    fail "no line about the recorded authentication: $(head -3 "$log")"
grep -q "missed 0," "$log" || fail "authenticated trace: $(grep requests "$log")"
# without --credentials, a client without them is served from that trace
start_replay AREP "$TMP/auth.zst" --strict
"$PYTHON" "$WL" "mongodb://127.0.0.1:$AREP/" >"$TMP/auth.plain" ||
    fail "pymongo without credentials failed against the authenticated trace"
same_lines "$TMP/py.capture" "$TMP/auth.plain"
stop_wait $REPLAY_PID || fail "--strict replay without credentials exited $?"

# ---- 5. summary, --auth-source, bad options ----
stop_wait $REP_PID || fail "replay exited $?"
log=$TMP/replay.$REP.log
grep -q "authenticating like mongod --auth: 4 users of database admin, SCRAM-SHA-1 (10000 iterations) and SCRAM-SHA-256 (15000 iterations)" "$log" ||
    fail "no start line: $(head -3 "$log")"
grep -q "authentication failed: wrong password" "$log" || fail "no wrong-password line"
grep -q "authentication failed: unknown user: no user 'nobody' in database 'admin'" "$log" ||
    fail "no unknown-user line: $(grep -i 'auth' "$log" | head)"
grep -E -q "authentication: [1-9][0-9]* succeeded \([1-9][0-9]* begun in hello\), [1-9][0-9]* failed; [1-9][0-9]* commands refused" "$log" ||
    fail "summary: $(grep authentication: "$log")"
"$PYTHON" - "$TMP/sum.json" <<'PYEOF' || fail "summary JSON"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["auth_ok"] >= 5 and j["auth_failed"] >= 4 and j["unauthorized"] >= 1, j
assert j["auth_speculative"] >= 1 and j["missed"] == 0, j
PYEOF

start_replay DREP "$TMP/py.zst" --credentials 'app:pa:ss' --auth-source benchmark_db --scram-iterations 4096
py=$("$PYTHON" - "$DREP" <<'PYEOF'
import sys
from pymongo import MongoClient
from pymongo.errors import OperationFailure
for src in ("benchmark_db", "admin"):
    c = MongoClient("mongodb://app:pa%%3Ass@127.0.0.1:%s/?authSource=%s" % (sys.argv[1], src),
                    serverSelectionTimeoutMS=5000)
    try:
        print(src, c.benchmark_db.test_col.find_one({"_id": "test-doc-1"}))
    except OperationFailure as e:
        print(src, "code", e.code)
    c.close()
PYEOF
)
grep -qx "benchmark_db {'_id': 'test-doc-1', 'value': 42}" <<<"$py" || fail "--auth-source: $py"
grep -qx "admin code 18" <<<"$py" || fail "--auth-source, other db: $py"
stop_wait $REPLAY_PID || fail "replay exited $?"
grep -q "1 user of database benchmark_db, SCRAM-SHA-1 (4096 iterations) and SCRAM-SHA-256 (4096" "$TMP/replay.$DREP.log" ||
    fail "--scram-iterations: $(head -3 "$TMP/replay.$DREP.log")"

bad_opt() { # ARGS... -- exit 2, one line containing $expect
    local out st
    out=$("$MTRACE" replay --listen 127.0.0.1:0 "$@" "$TMP/py.zst" 2>&1)
    st=$?
    [ $st -eq 2 ] || fail "replay $* exited $st (want 2): $out"
    [ "$(wc -l <<<"$out")" -eq 1 ] || fail "replay $*: more than one line: $out"
    grep -q -- "$expect" <<<"$out" || fail "replay $*: '$out' lacks '$expect'"
}
expect="USER:PASSWORD" bad_opt --credentials nocolon
expect="USER:PASSWORD" bad_opt --credentials :pw
expect="SASLprep (RFC 4013) refuses the password: Prohibited code points in input" bad_opt --credentials 'u:a'$'\x07''b'
expect="empty password" bad_opt --credentials 'u:'
expect="need --credentials" bad_opt --auth-source test
expect="drivers refuse fewer than 4096" bad_opt --credentials u:p --scram-iterations 100
echo "ok: pymongo (3 mechanisms, escapes, ':' and non-ASCII passwords, SASLprep), Node and libmongoc authenticate and run their recorded workloads; wrong password 18, none 13; recorded SCRAM exchanges never served; --auth-source; bad options exit 2"
