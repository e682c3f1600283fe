#!/usr/bin/env bash
# test_whatif.sh -- the what-if workflow (tools/whatif.sh, docs/whatif.md),
# shortened: 200 sequential calls, 10 threads x 20.  Real peers only: pymongo
# (/usr/bin/python3) against mtrace replay of traces/sample.zst, mtrace
# calibrate, mtrace sim, gnuplot; then the Node.js driver as a
# bring-your-own client; then a client that breaks the output contract.
# Checks the report's structure, that measured numbers are positive and
# consistent (delay 1 ms about 1 ms slower than delay 0), that every
# predicted number came from mtrace sim, and that no process is left behind.
. "$(dirname "$0")/lib.sh"
WHATIF=$TOP/tools/whatif.sh
R=$TMP/rep

# 1. the default workflow, shortened (calibrate, sniff as root, pymongo)
"$WHATIF" --out "$R" --calls 200 --threads 10 --threads-calls 20 >"$TMP/out" 2>"$TMP/err" ||
    { cat "$TMP/err" "$TMP/out"; fail "whatif exited $?"; }
cat "$TMP/out"
grep -q "^whatif \[.*\] 6/6 done" "$TMP/err" || fail "no progress lines: $(tail -3 "$TMP/err")"
for f in report.md report.json host.txt model.scn sweep.scn params.txt \
    latency-delay0.png latency-delay1.png threads.png; do
    [ -s "$R/$f" ] || fail "report file $f missing or empty"
done
for p in latency-delay0.png latency-delay1.png threads.png; do
    [ "$(head -c 8 "$R/$p" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] ||
        fail "$p is not a PNG"
done
grep -q "^| scenario | measured mean ms |" "$R/report.md" || fail "report.md has no table"
! grep -q WARNING "$R/report.md" || fail "report warns: $(grep WARNING "$R/report.md")"
grep -q "^delay 1 ms, 10 threads x 20, GIL " "$TMP/out" || fail "printed table lacks a row"

"$PYTHON" - "$R" <<'PY' || fail "report.json checks failed"
import json, os, sys
r = json.load(open(os.path.join(sys.argv[1], "report.json")))
bad = []
def check(ok, what):
    if not ok:
        bad.append(what)
rows = {x["id"]: x for x in r["rows"]}
want = ["d%s-%s-%s" % (d, m, rt) for d in ("0", "1") for m in ("seq", "t10") for rt in ("gil", "ft")]
check(sorted(rows) == sorted(want), "rows %s" % sorted(rows))
for d in ("0", "1"):
    s = r["replay"][d]
    check(s["missed"] == 0 and s["served"] >= 200 + 10 * 20, "replay delay %s: %s" % (d, s))
for x in r["rows"]:
    p, m = x["predicted"], x["measured"]
    check(p["mean_ms"] > 0 and p["stdev_pct"] >= 0 and p["p99_ms"] >= p["p50_ms"] > 0,
          "%s predicted %s" % (x["id"], p))
    if x["runtime"] == "GIL":
        check(m is not None and m["mean_ms"] > 0 and m["stdev_pct"] >= 0 and
              m["p50_ms"] > 0 and m["n"] == (199 if x["threads"] == 1 else 200),
              "%s measured %s" % (x["id"], m))
        check(x["error_pct"] is not None, "%s: no error column" % x["id"])
    else:
        check(m is None, "%s: a free-threaded row was measured?" % x["id"])
    check(x["role"] == ("fitted" if x["id"].endswith("-seq-gil") else "predicted"), x["id"])
check(r["calibrate"] == "each" and r["fitted"] == ["d0-seq-gil", "d1-seq-gil"], "calibration")
# the fitted rows: mtrace sim solved the client's Python CPU from them
for d in ("0", "1"):
    x = rows["d%s-seq-gil" % d]
    e = abs(x["predicted"]["mean_ms"] - x["measured"]["mean_ms"]) / x["measured"]["mean_ms"]
    check(e < 0.05, "fitted row d%s not fitted: %s" % (d, x))
# delay 1 ms is about 1 ms slower than delay 0 (medians: robust on a busy box)
s0, s1 = rows["d0-seq-gil"]["measured"], rows["d1-seq-gil"]["measured"]
check(0.8 <= s1["p50_ms"] - s0["p50_ms"] <= 1.5, "p50 delay 1 - delay 0 = %.3f ms"
      % (s1["p50_ms"] - s0["p50_ms"]))
check(0.4 <= s1["mean_ms"] - s0["mean_ms"] <= 3.0, "mean delay 1 - delay 0 = %.3f ms"
      % (s1["mean_ms"] - s0["mean_ms"]))
ach = r["replay"]["1"]["achieved"]["p50_ms"]
check(0.95 <= ach <= 1.3, "replay achieved delay p50 %.3f ms" % ach)
# the sweep: 2 runtimes x 5 thread counts x 4 delays, all from mtrace sim
sw = r["sweep"]
check(len(sw) == 40, "sweep has %d points" % len(sw))
check({(x["runtime"], x["threads"], x["delay_ms"]) for x in sw} ==
      {(rt, t, d) for rt in ("GIL", "free-threaded") for t in (1, 2, 4, 10, 20)
       for d in (0, 0.5, 1, 2)}, "sweep grid")
check(all(x["predicted"]["mean_ms"] > 0 for x in sw), "sweep means")
g = {(x["threads"], x["delay_ms"]): x["predicted"]["mean_ms"] for x in sw if x["runtime"] == "GIL"}
check(g[(1, 2)] > g[(1, 1)] > g[(1, 0.5)] > g[(1, 0)], "1 thread: no growth with the delay")
check(0.8 <= g[(1, 1)] - g[(1, 0)] <= 1.5, "1 thread: delay 1 - delay 0 predicted %.3f ms"
      % (g[(1, 1)] - g[(1, 0)]))
check(g[(20, 0)] > g[(1, 0)], "20 threads not slower than 1")
check(any(x["measured"] for x in sw if x["threads"] == 10 and x["delay_ms"] == 1),
      "sweep lacks the measured 10-thread point")
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
print("report.json: %d rows, %d sweep points, delay 1 - delay 0 p50 %.3f ms" %
      (len(r["rows"]), len(sw), s1["p50_ms"] - s0["p50_ms"]))
PY
# every predicted row is what mtrace sim says for the written scenarios
"$MTRACE" sim --json --no-params --host "$R/host.txt" --scenario "$R/model.scn" \
    --only d1-t10-ft >"$TMP/sim.json" || fail "mtrace sim on model.scn failed"
"$PYTHON" - "$R/report.json" "$TMP/sim.json" <<'PY' || fail "report does not match mtrace sim"
import json, sys
r = json.load(open(sys.argv[1]))
s = json.loads(open(sys.argv[2]).read().splitlines()[0])
row = [x for x in r["rows"] if x["id"] == "d1-t10-ft"][0]
assert abs(row["predicted"]["mean_ms"] - s["mean_ms"]) < 1e-9, (row, s)
PY

# 2. bring your own client: the Node.js driver, reusing the host facts; the
# client's CPU solved from delay 0 only (delay 1's sequential row predicted)
NODE_CLIENT="node $TOP/tests/integration/whatif_node_client.js {uri} {seq} {threads} {calls}"
"$WHATIF" --out "$TMP/node" --host "$R/host.txt" --no-sniff --calls 100 --threads 4 \
    --threads-calls 10 --calibrate delay0 --client "$NODE_CLIENT" >"$TMP/nout" 2>"$TMP/nerr" ||
    { cat "$TMP/nerr"; fail "whatif with the Node.js client exited $?"; }
"$PYTHON" - "$TMP/node/report.json" <<'PY' || fail "Node.js report checks failed"
import json, sys
r = json.load(open(sys.argv[1]))
m = {x["id"]: x["measured"] for x in r["rows"] if x["measured"]}
assert sorted(m) == ["d0-seq-gil", "d0-t4-gil", "d1-seq-gil", "d1-t4-gil"], sorted(m)
assert m["d0-seq-gil"]["n"] == 99 and m["d0-t4-gil"]["n"] == 40, m
assert 0.8 <= m["d1-seq-gil"]["p50_ms"] - m["d0-seq-gil"]["p50_ms"] <= 1.5, m
assert "whatif_node_client.js" in r["client"]
assert r["fitted"] == ["d0-seq-gil"], r["fitted"]
d1 = [x for x in r["rows"] if x["id"] == "d1-seq-gil"][0]
assert d1["role"] == "predicted" and d1["error_pct"] is not None, d1
assert "not sniffed" in r["server_service_times"], r["server_service_times"]
print("node client: delay 0 p50 %.3f ms, delay 1 p50 %.3f ms" %
      (m["d0-seq-gil"]["p50_ms"], m["d1-seq-gil"]["p50_ms"]))
PY

# 3. a client that breaks the output contract: clear error, exit 1
"$WHATIF" --out "$TMP/bad" --host "$R/host.txt" --no-sniff --client "echo hello {uri}" \
    >/dev/null 2>"$TMP/berr"
st=$?
[ $st -eq 1 ] || fail "bad client: exit $st, want 1"
grep -q "client output line 1: expected" "$TMP/berr" || fail "bad client: $(cat "$TMP/berr")"

# nothing left running from this test's report folders
! pgrep -f "$TMP" >/dev/null || fail "processes left behind: $(pgrep -af "$TMP")"
echo "whatif: ok"
