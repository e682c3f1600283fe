#!/usr/bin/env bash
# test_pcap_redact.sh -- `mtrace capture --iface lo --redact` removes SASL
# payloads and named fields on the pcap/live path too.  Two captures watch
# the same loopback traffic: one plain (the control: the secrets really were
# on the wire, so this test can fail) and one with --redact --redact ssn.
# pymongo sends a saslStart with a payload and a find on {ssn: ...} to
# MockupDB.  Needs root (CAP_NET_RAW).
. "$(dirname "$0")/lib.sh"
start_mock PORT
for t in plain red; do
    args=()
    [ $t = red ] && args=(--redact --redact ssn)
    "$MTRACE" capture --iface lo --port "$PORT" --duration 60 "${args[@]}" \
        -o "$TMP/$t.zst" 2>"$TMP/$t.err" &
    eval "CAP_$t=$!"
    track_pid $!
done
for t in plain red; do
    for ((i = 0; i < 100; i++)); do [ -s "$TMP/$t.zst" ] && break; sleep 0.05; done
    [ -s "$TMP/$t.zst" ] || { cat "$TMP/$t.err"; fail "capture $t did not start"; }
done
"$PYTHON" - "$PORT" <<'PY' || fail "pymongo client failed"
import sys
import bson
from pymongo import MongoClient
from pymongo.errors import OperationFailure
c = MongoClient("127.0.0.1", int(sys.argv[1]), serverSelectionTimeoutMS=5000)
try:
    c.admin.command("saslStart", 1, mechanism="SCRAM-SHA-256",
                    payload=bson.Binary(b"n,,n=alice,r=SECRETNONCE0123456789"),
                    autoAuthorize=1)
except OperationFailure:
    pass  # MockupDB does not speak SASL: the request is what matters
assert c.benchmark_db.test_col.find_one({"ssn": "123-45-6789"}) is None
c.close()
PY
sleep 0.3
kill -INT "$CAP_plain" "$CAP_red"
wait "$CAP_plain" || fail "plain capture exited $?"
wait "$CAP_red" || { cat "$TMP/red.err"; fail "redacting capture exited $?"; }
for t in plain red; do
    zstd -dcq "$TMP/$t.zst" >"$TMP/$t.raw" || fail "zstd -d $t"
    "$MTRACE" dump --json "$TMP/$t.zst" >"$TMP/$t.json" || fail "dump $t"
done
grep -qa SECRETNONCE "$TMP/plain.raw" || fail "control: SASL payload not seen on the wire"
grep -qa 123-45-6789 "$TMP/plain.raw" || fail "control: ssn not seen on the wire"
! grep -qa SECRETNONCE "$TMP/red.raw" || fail "SASL payload left in the redacted trace"
! grep -qa 123-45-6789 "$TMP/red.raw" || fail "ssn value left in the redacted trace"
# Redacted messages are still whole, parseable messages, flagged as such,
# and the authentication conversation is still marked.
jq -e -s '[.[] | select(.type == "msg" and .cmd == "saslStart" and .dir == "c2s")]
          | length == 1 and (.[0].error == null) and .[0].auth' "$TMP/red.json" >/dev/null ||
    fail "saslStart missing, unparseable or not marked auth: $(grep saslStart "$TMP/red.json")"
jq -e -s '[.[] | select(.type == "msg" and .cmd == "find" and .dir == "c2s")]
          | length == 1 and (.[0].error == null) and (.[0].body.filter.ssn != "123-45-6789")' \
    "$TMP/red.json" >/dev/null || fail "find not redacted: $(grep '"find"' "$TMP/red.json")"
n_plain=$(jq -s '[.[] | select(.type == "msg")] | length' "$TMP/plain.json")
n_red=$(jq -s '[.[] | select(.type == "msg")] | length' "$TMP/red.json")
[ "$n_plain" -eq "$n_red" ] || fail "plain trace has $n_plain messages, redacted $n_red"
echo "pcap redact: $n_red messages, secrets only in the plain trace"
