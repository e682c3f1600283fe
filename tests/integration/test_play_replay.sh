#!/usr/bin/env bash
# test_play_replay.sh -- `mtrace play` against `mtrace replay` of the same
# trace, and the round trip through the capture proxy.
#
# pymongo's workload (replay_workload.py: cursors over several getMore
# batches, a killCursors, inserts, a w:0 insert with moreToCome, an error)
# is captured through `mtrace capture` to MockupDB (A.zst), sequential
# and with 4 threads (getMore may then run on another pooled connection
# than its find), and the Node.js driver's (replay_workload.js).  Then:
#  1. play A.zst at --max-speed against `mtrace replay A.zst`: every request
#     answered, 0 misses in replay's summary, no reply differing in shape,
#     per-command counts of the summary equal to A's, lateness reported;
#     `mtrace stats --compare A.zst B.zst` (play's -o) agrees, as JSON too.
#  2. play A.zst at 1x through a second capture proxy in front of replay
#     (C.zst): per connection, the sequence of commands (handshakes and
#     authentication aside) of C equals A's; getMore cursor ids in C are
#     the ones replay handed out, not A's; C's think times (a reply to the
#     next request) are never shorter than A's (how much longer is
#     printed beside play's lateness, not asserted: no timed assertion).
#  3. --repeat 2 --connections-per-recorded 3: six times the requests on six
#     connections (distinct ids in the -o trace), six sessions, 0 misses;
#     --skip-writes sends no insert/update/delete; --only-commands find
#     sends find and the getMore/killCursors of its cursors only; --db
#     renames $db.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replay_lib.sh"
WL=$TOP/tests/integration/replay_workload.py

start_mock MOCK
[ -d "$TOP/tests/integration/node_modules/mongodb" ] ||
    fail "mongodb@6 missing: run tools/deps.sh --check-or-install"
for mode in seq threads node; do
args=()
[ $mode = threads ] && args=(--threads 4)
rm -f "$TMP"/[ABC].zst
start_capture CAP "$MOCK" "$TMP/A.zst"
if [ $mode = node ]; then
    node "$TOP/tests/integration/replay_workload.js" "mongodb://127.0.0.1:$CAP/" >"$TMP/wl.out" ||
        fail "node workload through capture failed"
else
    "$PYTHON" "$WL" "mongodb://127.0.0.1:$CAP/" "${args[@]}" >"$TMP/wl.out" || fail "workload through capture failed"
fi
stop_wait $CAPTURE_PID || fail "capture exited $?"

# 1. --max-speed against replay
start_replay REP "$TMP/A.zst"
"$MTRACE" play "$TMP/A.zst" --target 127.0.0.1:"$REP" --max-speed -o "$TMP/B.zst" \
    >"$TMP/play1.out" 2>"$TMP/play1.err" || fail "play exited $?: $(cat "$TMP/play1.err")"
cat "$TMP/play1.out"
stop_wait $REPLAY_PID
log=$TMP/replay.$REP.log
grep -q "missed 0," "$log" || fail "replay saw misses: $(tail -3 "$log")"
grep -Eq '^played .* [1-9][0-9]* requests sent, [0-9]+ answered, [0-9]+ without reply by design \(moreToCome\), 0 unanswered, 0 not sent' \
    "$TMP/play1.out" || fail "summary line: $(head -1 "$TMP/play1.out")"
grep -q 'send lateness against the schedule: p50' "$TMP/play1.out" || fail "no lateness line"
grep -Eq '^never re-sent: [1-9][0-9]* recorded handshakes' "$TMP/play1.out" || fail "handshakes not counted"
grep -Eq '[1-9][0-9]* cursors and' "$TMP/play1.out" || fail "no cursor remapped"

"$MTRACE" stats --compare "$TMP/A.zst" "$TMP/B.zst" --json >"$TMP/cmp.json" ||
    fail "stats --compare exited $?"
"$MTRACE" stats --compare "$TMP/A.zst" "$TMP/B.zst" >"$TMP/cmp.txt" || fail "stats --compare (text) exited $?"
cat "$TMP/cmp.txt"
"$MTRACE" dump --json "$TMP/B.zst" | grep -q '"source":"play"' || fail "B.zst is not a play trace"
"$PYTHON" - "$TMP/cmp.json" "$TMP/play1.out" <<'PY' || fail "compare / summary check failed"
import json, re, sys
cmp = json.load(open(sys.argv[1]))
cmds = cmp["commands"]
for want in ("find", "getMore", "killCursors", "insert", "aggregate", "fail_me"):
    assert want in cmds, "compare lacks %s: %s" % (want, sorted(cmds))
for name, c in cmds.items():
    a, b = c["a"], c["b"]
    assert a["requests"] == b["requests"], (name, a, b)
    assert a["replies"] == b["replies"], (name, a, b)
    assert c["shape_diffs"] == 0, (name, c)
    assert a["errors_by_code"] == b["errors_by_code"], (name, a, b)
assert cmds["fail_me"]["b"]["errors_by_code"] == {"2": cmds["fail_me"]["a"]["requests"]}, cmds["fail_me"]
assert cmds["getMore"]["a"]["requests"] >= 2, cmds["getMore"]
assert cmp["pairs"] == sum(c["a"]["replies"] for c in cmds.values()) > 10, cmp["pairs"]
# play's own summary: the same counts per command, recorded == played
rows = {}
for line in open(sys.argv[2]):
    m = re.match(r"^(\S*)\s+(recorded|played)\s+(\d+)\s+(\d+)\s", line)
    if m:
        name = m.group(1) or last
        last = name
        rows.setdefault(name, {})[m.group(2)] = (int(m.group(3)), int(m.group(4)))
assert rows, "no per-command rows"
for name, r in rows.items():
    assert r["recorded"] == r["played"], (name, r)
    assert cmds[name]["a"]["requests"] == r["recorded"][0], (name, r, cmds[name])
print("ok: compare and summary agree on %d commands, %d pairs" % (len(rows), cmp["pairs"]))
PY

# 2. 1x through a proxy in front of replay: the same request sequences
start_replay REP2 "$TMP/A.zst"
start_capture CAP2 "$REP2" "$TMP/C.zst"
"$MTRACE" play "$TMP/A.zst" --target 127.0.0.1:"$CAP2" >"$TMP/play2.out" 2>"$TMP/play2.err" ||
    fail "play at 1x exited $?: $(cat "$TMP/play2.err")"
stop_wait $CAPTURE_PID || fail "second capture exited $?"
stop_wait $REPLAY_PID
grep -q "missed 0," "$TMP/replay.$REP2.log" || fail "replay (1x) saw misses"
grep -q 'send lateness against the schedule' "$TMP/play2.out" || fail "no lateness at 1x"
grep 'send lateness against the schedule' "$TMP/play2.out"
"$MTRACE" dump --json "$TMP/A.zst" >"$TMP/A.json"
"$MTRACE" dump --json "$TMP/C.zst" >"$TMP/C.json"
"$PYTHON" - "$TMP/A.json" "$TMP/C.json" <<'PY' || fail "round trip: request sequences differ"
import json, sys
SKIP = {"hello", "isMaster", "ismaster", "saslStart", "saslContinue", "authenticate"}
def seqs(path):
    conns, order, gm = {}, [], []
    for line in open(path):
        r = json.loads(line)
        if r.get("type") != "msg" or r.get("dir") != "c2s":
            continue
        name = r.get("cmd")
        if name in SKIP:
            continue
        c = r["conn"]
        if c not in conns:
            conns[c] = []
            order.append(c)
        conns[c].append((name, r.get("db"), r.get("coll")))
        if name == "getMore":
            gm.append(json.dumps(r["body"]["getMore"]))
    return [conns[c] for c in order], gm
a, gma = seqs(sys.argv[1])
c, gmc = seqs(sys.argv[2])
assert sorted(a) == sorted(c), "A %r\nC %r" % (a, c)
assert len(gma) == len(gmc) >= 2, (len(gma), len(gmc))
assert not set(gma) & set(gmc), "getMore sent recorded cursor ids: %r %r" % (gma, gmc)
print("ok: %d connections, %d requests in the same per-connection order"
      % (len(a), sum(len(s) for s in a)))

# timing: a request that followed a reply on its connection is sent its
# recorded think time after that reply or later, never earlier (the
# proxy stamps a reply before play can read it, and a request after play
# wrote it); how much later is printed beside play's lateness.  Only
# connections whose request sequence is unique in A, so that A's and C's
# pair up.
def gaps(path):
    conns = {}
    for line in open(path):
        r = json.loads(line)
        if r.get("type") != "msg":
            continue
        c = conns.setdefault(r["conn"], {"seq": [], "gaps": {}, "prev": None})
        if r["dir"] == "c2s" and r.get("cmd") not in SKIP:
            p = c["prev"]
            if p is not None and p[0] == "s2c" and p[2] and c["seq"]:
                c["gaps"][len(c["seq"])] = r["t_ns"] - p[1]
            c["seq"].append((r.get("cmd"), r.get("db"), r.get("coll")))
        c["prev"] = (r["dir"], r["t_ns"], r["dir"] == "s2c" or r.get("cmd") not in SKIP)
    return {tuple(c["seq"]): c["gaps"] for c in conns.values() if c["seq"]}, \
        [tuple(c["seq"]) for c in conns.values() if c["seq"]]
ga, seqa = gaps(sys.argv[1])
gc, _ = gaps(sys.argv[2])
excess = []
for sq, g in ga.items():
    if seqa.count(sq) != 1:
        continue
    for i, t in g.items():
        if i in gc.get(sq, {}):
            assert gc[sq][i] >= t, "request %d of %r sent %d ns after its reply, " \
                "recorded %d ns: early" % (i, sq[i], gc[sq][i], t)
            excess.append(gc[sq][i] - t)
excess.sort()
assert len(excess) >= 5 or len(set(seqa)) < len(seqa), "%d gaps compared" % len(excess)
if excess:
    print("ok: %d think times kept, none early; later than recorded by p50 %.3f ms, "
          "max %.3f ms" % (len(excess), excess[len(excess) // 2] / 1e6, excess[-1] / 1e6))
PY
echo "ok: $mode: play against replay: $(head -1 "$TMP/play1.out")"
[ $mode = seq ] && cp "$TMP/A.zst" "$TMP/seq.zst"
done

# 3. --repeat and --connections-per-recorded multiply the load; filters
A=$TMP/seq.zst
sent1=$("$MTRACE" play "$A" --target 127.0.0.1:"$MOCK" --max-speed --json |
    "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["sent"])')
start_replay REP3 "$A"
"$MTRACE" play "$A" --target 127.0.0.1:"$REP3" --max-speed --repeat 2 --connections-per-recorded 3 \
    --json -o "$TMP/x6.zst" >"$TMP/x6.json" 2>"$TMP/x6.err" || fail "x6: play exited $?: $(cat "$TMP/x6.err")"
stop_wait $REPLAY_PID
grep -q "missed 0," "$TMP/replay.$REP3.log" || fail "x6: replay saw misses: $(grep requests "$TMP/replay.$REP3.log")"
"$PYTHON" - "$TMP/x6.json" "$sent1" <<'PY' || fail "--repeat 2 x 3 connections: wrong counts"
import json, sys
d = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
assert d["sent"] == 6 * n and d["unanswered"] == 0 and d["connections"] == 6, (d["sent"], n, d["connections"])
for name, c in d["report"]["commands"].items():
    assert c["b"]["requests"] == c["a"]["requests"], (name, c)
    assert c["shape_diffs"] == 0, (name, c)
assert d["sessions_remapped"] == 6, d["sessions_remapped"]
print("ok: --repeat 2 --connections-per-recorded 3: %d requests (6 x %d) on 6 connections" % (d["sent"], n))
PY
ids=$("$MTRACE" dump --json "$TMP/x6.zst" | grep '"type":"conn_open"' | grep -o '"conn":[0-9]*' | sort -u | wc -l)
[ "$ids" -eq 6 ] || fail "x6: $ids distinct connection ids in the -o trace"

"$MTRACE" play "$A" --target 127.0.0.1:"$MOCK" --max-speed --skip-writes -o "$TMP/ro.zst" >"$TMP/ro.out" ||
    fail "--skip-writes: exit $?"
"$MTRACE" dump --json "$TMP/ro.zst" | grep '"dir":"c2s"' | grep -Eq '"cmd":"(insert|update|delete)"' &&
    fail "--skip-writes sent a write"
grep -Eq '; [1-9][0-9]* filtered out' "$TMP/ro.out" || fail "--skip-writes: nothing filtered: $(sed -n 2p "$TMP/ro.out")"
"$MTRACE" play "$A" --target 127.0.0.1:"$MOCK" --max-speed --only-commands find --db benchmark_db=other_db \
    -o "$TMP/only.zst" >"$TMP/only.out" || fail "--only-commands: exit $?"
"$MTRACE" dump --json "$TMP/only.zst" | grep '"dir":"c2s"' | grep -v '"cmd":"hello"' >"$TMP/only.json"
cmds=$(grep -o '"cmd":"[a-zA-Z]*"' "$TMP/only.json" | sort -u | tr '\n' ' ')
[ "$cmds" = '"cmd":"find" "cmd":"getMore" "cmd":"killCursors" ' ] || fail "--only-commands find sent: $cmds"
grep -q '"db":"benchmark_db"' "$TMP/only.json" && fail "--db did not rename benchmark_db"
grep -q '"db":"other_db"' "$TMP/only.json" || fail "--db: no request to other_db"
# getMore/killCursors of cursors no played request opened: reported, not sent
"$MTRACE" play "$A" --target 127.0.0.1:"$MOCK" --max-speed --only-commands ping >"$TMP/nc.out" ||
    fail "--only-commands ping: exit $?"
grep -Eq '; [1-9][0-9]* getMore/killCursors without a live cursor' "$TMP/nc.out" ||
    fail "getMore without cursor not reported: $(sed -n 2p "$TMP/nc.out")"
echo "ok: --skip-writes, --only-commands find (getMore/killCursors follow), --db rename, getMore without a live cursor reported"
