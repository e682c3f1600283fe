#!/usr/bin/env bash
# test_replay_pcap.sh -- a trace from a real third-party capture
# (../shared/captures/deeptrace-mongo-msg.pcap: one OP_MSG find from another
# driver against a real mongod, with $clusterTime and lsid) read with
# `mtrace capture --pcap`, replayed to pymongo: the same find, with its own
# lsid and no $clusterTime, gets the recorded document.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replay_lib.sh"
PCAP=$TOP/../shared/captures/deeptrace-mongo-msg.pcap
[ -r "$PCAP" ] || PCAP=/work/shared/captures/deeptrace-mongo-msg.pcap
[ -r "$PCAP" ] || fail "public capture deeptrace-mongo-msg.pcap not found"

"$MTRACE" capture --pcap "$PCAP" --port 3717 -o "$TMP/dt.zst" 2>"$TMP/cap.log" ||
    fail "capture --pcap failed: $(cat "$TMP/cap.log")"
start_replay REP "$TMP/dt.zst" --strict
"$PYTHON" - "$REP" <<'PY' || fail "pymongo did not get the recorded document"
import sys
from bson.objectid import ObjectId
from pymongo import MongoClient
c = MongoClient(f"mongodb://127.0.0.1:{sys.argv[1]}/", serverSelectionTimeoutMS=5000)
docs = list(c["sky-test"].query.find({"name": "drpanda5"}))
assert docs == [{"_id": ObjectId("672c2bc7f4ef2be05f1ddcc4"), "name": "drpanda5", "age": "111"}], docs
c.close()
print("recorded document served:", docs[0])
PY
stop_wait $REPLAY_PID || fail "--strict replay exited $? (a miss?): $(tail -3 "$TMP"/replay.*.log)"
grep -q "matched 1," "$TMP"/replay.*.log || fail "the find was not matched: $(tail -2 "$TMP"/replay.*.log)"
