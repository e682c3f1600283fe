#!/usr/bin/env bash
# test_whatif.sh -- the what-if workflow (tools/whatif.sh, docs/whatif.md),
# shortened: 200 sequential calls, 10 threads x 20.  Real peers only: pymongo
# (/usr/bin/python3) against mtrace replay of traces/sample.zst, mtrace
# calibrate, mtrace sim, gnuplot; then the Node.js driver as a
# bring-your-own client; then a client that breaks the output contract.
# Checks the report's structure, that measured numbers are positive and
# consistent (delay 1 ms about 1 ms slower than delay 0), that every
# prediction has its interval and binding resource and came from the
# mtrace sim command the report lists, which calibration each client got
# (pymongo: its own CPU per call and driver-lock sections from each
# delay's sequential run; Node.js: solved from the sequential means), and
# that no process is left behind.
. "$(dirname "$0")/lib.sh"
WHATIF=$TOP/tools/whatif.sh
R=$TMP/rep

# Where the host allows it (root), a PM QoS request of 0 us is held for the
# whole test (core/pmqos.h, docs/replay.md "CPU wake-up latency"): in a VM
# an idle vCPU halts, and a busy host can take milliseconds to run it again;
# once (fresh-clone CI run, 13:21 UTC) that moved the delay-1 client's p50
# by +1.8 ms while replay's own achieved delay was on time.  Calibration and
# measurements then run in the same regime (idle CPUs poll), as
# VALIDATE_PMQOS=0 sim/validate.sh does.  Not held: the test runs as is.
# The request is global, so, as test_capture_pmqos.py does, it is held only
# together with the benchmarks' lock file ($MTRACE_BENCH_LOCK, default
# /tmp/mtrace-bench.lock) when that file exists: a benchmark running
# meanwhile keeps its lock and is not measured under a request it did not
# ask for (the test then runs without the request, not waiting).
if [ -w /dev/cpu_dma_latency ]; then
    MTRACE_BENCH_LOCK=${MTRACE_BENCH_LOCK:-/tmp/mtrace-bench.lock} \
        "$PYTHON" -c 'import fcntl, os, struct, sys, time
lock = os.environ["MTRACE_BENCH_LOCK"]
if os.path.exists(lock):
    lf = open(lock, "a")
    try:
        fcntl.flock(lf, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        print("whatif test: a benchmark holds %s: no PM QoS request" % lock)
        sys.exit(0)
fd = os.open("/dev/cpu_dma_latency", os.O_WRONLY)
os.write(fd, struct.pack("i", 0))
time.sleep(3600)' &
    track_pid $!
fi

# 1. the default workflow, shortened (calibrate, sniff as root, pymongo)
"$WHATIF" --out "$R" --calls 200 --threads 10 --threads-calls 20 >"$TMP/out" 2>"$TMP/err" ||
    { cat "$TMP/err" "$TMP/out"; fail "whatif exited $?"; }
cat "$TMP/out"
grep -q "^whatif \[.*\] 6/6 done" "$TMP/err" || fail "no progress lines: $(tail -3 "$TMP/err")"
for f in report.md report.json host.txt commands.txt params.txt \
    latency-delay0.png latency-delay1.png threads.png; do
    [ -s "$R/$f" ] || fail "report file $f missing or empty"
done
for p in latency-delay0.png latency-delay1.png threads.png; do
    [ "$(head -c 8 "$R/$p" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] ||
        fail "$p is not a PNG"
done
grep -q "^| scenario | measured mean ms | stdev% | predicted mean ms \[interval\] |" "$R/report.md" ||
    fail "report.md has no table"
! grep -q WARNING "$R/report.md" || fail "report warns: $(grep WARNING "$R/report.md")"
grep -q "^delay 1 ms, 10 threads x 20, GIL " "$TMP/out" || fail "printed table lacks a row"

"$PYTHON" - "$R" <<'PY' || fail "report.json checks failed"
import json, os, shlex, sys
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
    # the interval over the runs holds the central value
    check(p["mean_lo_ms"] <= p["mean_ms"] <= p["mean_hi_ms"] and p["runs"] >= 2,
          "%s interval %s" % (x["id"], p))
    check(x["binding"] in ("gil", "cores", "lock", "pool", "delay") and
          set(x["util"]) >= {"gil", "cores", "lock", "pool"}, "%s binding %s %s"
          % (x["id"], x["binding"], x["util"]))
    if x["runtime"] == "GIL":
        check(m is not None and m["mean_ms"] > 0 and m["stdev_pct"] >= 0 and
              m["p50_ms"] > 0 and m["n"] == (199 if x["threads"] == 1 else 200),
              "%s measured %s" % (x["id"], m))
        check(x["error_pct"] is not None, "%s: no error column" % x["id"])
    else:
        check(m is None, "%s: a free-threaded row was measured?" % x["id"])
    check(x["role"] == "predicted", "%s: role %s" % (x["id"], x["role"]))
# the default client reports its CPU per call and its driver-lock sections:
# each delay's rows are calibrated from that delay's sequential run, no row
# fitted, and no threaded figure is in any mtrace sim command
c = r["calibration"]
check(r["calibrate"] == "auto" and c["mode"] == "cpu" and r["fitted"] == [],
      "calibration %s %s" % (r["calibrate"], c))
cmds = {}
for line in open(os.path.join(sys.argv[1], "commands.txt")):
    k, cmd = line.split(": ", 1)
    cmds[k] = shlex.split(cmd)
def opt(argv, name):
    return argv[argv.index(name) + 1] if name in argv else None
for d in ("0", "1"):
    cpu = c["client_cpu"][d]
    check(cpu.get("cpu_us", 0) > 0 and cpu.get("cpu_cv", -1) >= 0 and
          cpu.get("lock_sections", 0) >= 1 and cpu.get("lock_hold_us", -1) >= 0,
          "client CPU at delay %s: %s" % (d, cpu))
    for k in ("d%s-seq-gil" % d, "d%s-t10-gil" % d, "d%s-t10-ft" % d):
        a = cmds[k]
        check(abs(float(opt(a, "--seq-cpu-us")) - cpu["cpu_us"]) < 0.01 and
              opt(a, "--seq-delay-ms") == d and opt(a, "--delay-ms") == d,
              "%s: not from delay %s's sequential run: %s" % (k, d, a))
        check(round(cpu["lock_sections"]) == float(opt(a, "--lock-sections")),
              "%s: lock sections %s" % (k, a))
        seq = rows["d%s-seq-gil" % d]["measured"]
        check(abs(float(opt(a, "--seq-mean-ms")) - seq["mean_ms"]) < 1e-4,
              "%s: --seq-mean-ms is not the sequential mean" % k)
par = {p["name"]: p for p in c["params"]}
check(par.get("py_call_us", {}).get("origin") == "calibrated", "py_call_us %s" % par.get("py_call_us"))
# every sequential mean is a prediction, built from (at least) the client's
# own CPU per call, plus the delay at delay 1 (no timing compared: the
# measured mean of a busy machine is not a target)
for d in ("0", "1"):
    x = rows["d%s-seq-gil" % d]
    floor = c["client_cpu"][d]["cpu_us"] / 1000 + float(d)
    check(x["predicted"]["mean_ms"] >= 0.9 * floor,
          "d%s sequential predicted %.3f ms, less than its CPU + delay %.3f" % (
              d, x["predicted"]["mean_ms"], floor))
# replay held every reply of the delay-1 run at least 1 ms: no call of that
# run, and so no median, can be shorter (causal bounds only: how much longer
# depends on the machine's load, which make test does not judge; bench/ does)
s0, s1 = rows["d0-seq-gil"]["measured"], rows["d1-seq-gil"]["measured"]
check(s1["p50_ms"] >= 1.0, "p50 at delay 1 = %.3f ms, under the delay" % s1["p50_ms"])
check(s1["mean_ms"] >= 1.0, "mean at delay 1 = %.3f ms, under the delay" % s1["mean_ms"])
ach = r["replay"]["1"]["achieved"]["p50_ms"]
check(ach >= 0.99, "replay achieved delay p50 %.3f ms, under the delay"
      " (beyond its histogram's 0.2 %% buckets)" % ach)
# the sweep: 2 runtimes x 5 thread counts x 4 delays, all from mtrace sim
sw = r["sweep"]
check(len(sw) == 40, "sweep has %d points" % len(sw))
check({(x["runtime"], x["threads"], x["delay_ms"]) for x in sw} ==
      {(rt, t, d) for rt in ("GIL", "free-threaded") for t in (1, 2, 4, 10, 20)
       for d in (0, 0.5, 1, 2)}, "sweep grid")
check(all(x["predicted"]["mean_lo_ms"] <= x["predicted"]["mean_ms"] <=
          x["predicted"]["mean_hi_ms"] and x["binding"] for x in sw), "sweep intervals")
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
grep -q "^## Calibration" "$R/report.md" || fail "report.md has no Calibration section"
grep -q "^- py_call_us = .* \[calibrated\]" "$R/report.md" ||
    fail "report.md does not list py_call_us from the sequential run"
grep -q "^\* Calibration (params.txt): .*py_call_us = .* \[calibrated\]" "$TMP/out" ||
    fail "printed notes lack the calibration"

# every predicted row is what its mtrace sim command says
"$PYTHON" - "$R" "$MTRACE" <<'PY' || fail "report does not match mtrace sim"
import json, os, shlex, subprocess, sys
r = json.load(open(os.path.join(sys.argv[1], "report.json")))
cmd = [l for l in open(os.path.join(sys.argv[1], "commands.txt")) if l.startswith("d1-t10-ft: ")]
argv = shlex.split(cmd[0].split(": ", 1)[1])
argv[0] = sys.argv[2]
s = json.loads(subprocess.run(argv, capture_output=True, text=True, check=True).stdout.splitlines()[0])
row = [x for x in r["rows"] if x["id"] == "d1-t10-ft"][0]
assert abs(row["predicted"]["mean_ms"] - s["mean_ms"]) < 1e-9, (row, s)
PY

# 2. bring your own client: the Node.js driver; it reports no CPU per call,
# so each sequential row is solved from its mean.  The host facts are the
# validation's (docs/sim-validation/host.txt, measured on a quiet host):
# measured in a loaded test run, a wake-up can take longer than a whole
# sequential call, and the solve then refuses the facts (rightly)
NODE_CLIENT="node $TOP/tests/integration/whatif_node_client.js {uri} {seq} {threads} {calls}"
"$WHATIF" --out "$TMP/node" --host "$TOP/docs/sim-validation/host.txt" --no-sniff --calls 100 --threads 4 \
    --threads-calls 10 --client "$NODE_CLIENT" >"$TMP/nout" 2>"$TMP/nerr" ||
    { cat "$TMP/nerr"; fail "whatif with the Node.js client exited $?"; }
"$PYTHON" - "$TMP/node/report.json" <<'PY' || fail "Node.js report checks failed"
import json, sys
r = json.load(open(sys.argv[1]))
m = {x["id"]: x["measured"] for x in r["rows"] if x["measured"]}
assert sorted(m) == ["d0-seq-gil", "d0-t4-gil", "d1-seq-gil", "d1-t4-gil"], sorted(m)
assert m["d0-seq-gil"]["n"] == 99 and m["d0-t4-gil"]["n"] == 40, m
assert m["d1-seq-gil"]["p50_ms"] >= 1.0, m
assert "whatif_node_client.js" in r["client"]
assert r["fitted"] == ["d0-seq-gil", "d1-seq-gil"], r["fitted"]
assert "not sniffed" in r["server_service_times"], r["server_service_times"]
c = r["calibration"]
assert c["mode"] == "mean" and c["client_cpu"] == {"0": {}, "1": {}}, c
for d in ("0", "1"):
    s = [x for x in r["rows"] if x["id"] == "d%s-seq-gil" % d][0]
    assert s["role"] == "fitted", s
    assert abs(s["predicted"]["mean_ms"] / s["measured"]["mean_ms"] - 1) < 0.05, s
print("node client: delay 0 p50 %.3f ms, delay 1 p50 %.3f ms" %
      (m["d0-seq-gil"]["p50_ms"], m["d1-seq-gil"]["p50_ms"]))
PY
! grep -q -- "--seq-cpu-us\|--lock-sections" "$TMP/node/commands.txt" ||
    fail "Node.js predictions got CPU or lock figures it never reported"

# --calibrate cpu with a client that reports no CPU per call: clear error
"$WHATIF" --out "$TMP/nocpu" --host "$R/host.txt" --no-sniff --calibrate cpu \
    --client "printf 'seq 0.1\\nseq 0.2\\n'; : {uri}" >/dev/null 2>"$TMP/cerr"
st=$?
[ $st -eq 1 ] || fail "--calibrate cpu without CPU: exit $st, want 1: $(cat "$TMP/cerr")"
grep -q "calibrate cpu: the client printed no sequential CPU" "$TMP/cerr" ||
    fail "--calibrate cpu without CPU: $(cat "$TMP/cerr")"

# 3. a client that breaks the output contract: clear error, exit 1
"$WHATIF" --out "$TMP/bad" --host "$R/host.txt" --no-sniff --client "echo hello {uri}" \
    >/dev/null 2>"$TMP/berr"
st=$?
[ $st -eq 1 ] || fail "bad client: exit $st, want 1"
grep -q "client output line 1: expected" "$TMP/berr" || fail "bad client: $(cat "$TMP/berr")"

# nothing left running from this test's report folders
! pgrep -f "$TMP" >/dev/null || fail "processes left behind: $(pgrep -af "$TMP")"
echo "whatif: ok"
