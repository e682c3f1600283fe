#!/usr/bin/env bash
# validate.sh [--reps N] [--quick] -- regenerate the validation tables of
# docs/sim-model.md (between the <!-- validation:... --> markers).  Not part
# of `make test`: it takes a few minutes and its measurements vary.
#
#  1. Records a trace for mtrace replay: pymongo find_one against MockupDB
#     (tests/integration/mockmongo.py) through `mtrace capture`.
#  2. `mtrace calibrate` -> host facts.
#  3. For delay 0 and 1 ms: `mtrace replay --delay-ms D` is the server;
#     sim/validate_bench.py (seed 000's method, pymongo under /usr/bin/python3)
#     measures sequential 1000 calls (first excluded), the same sequential
#     client's CPU per call with consecutive calls on alternating cores
#     (--xcore: gil_xcore_cpu_us; at delay 0 --xcore-ab, round 12: also
#     with a PM QoS request of 0 held; round 15, --xpair: the same client as
#     two threads in strict alternation on two cores minus on one, halting
#     and with the request held, which validate.scn uses), then 2, 4, 10, 20 threads x 100 calls,
#     N times (--reps, default 5).  One extra sequential
#     run is sniffed on lo (`mtrace capture --iface lo`) for the server's
#     request->reply times; if sniffing fails the model's default server time
#     is used and the report says so.  Round 14: replay's and the sniffer's
#     CPU over that run go to OUT/srvcpu<d>.txt (a comment in validate.scn).
#  3b. A synthetic GIL workload (sim/validate_synth.py: Python work +
#     time.sleep, 1, 2, 4, 10 threads), to test the GIL model without a
#     driver or a server; since round 15 its Python CPU comes from the
#     1-thread row's thread CPU per iteration (VALIDATE_SYNTH_CPU=0: from
#     its mean, as before).
#  3c. Who takes the GIL at each release (sim/validate_handover.py: a
#     pymongo-shaped loop on socketpairs to an echo process, 1, 2, 4, 10
#     threads): a check of the GIL model's mechanism (table 1d).
#  4. `mtrace sim` is calibrated from the sequential rows only: the delay-0
#     row's client CPU per call (validate_bench.py's cpu_us), that CPU's cv
#     (cpu_cv: py_cv) and its --xcore figure; the delay-1 row's CPU per call
#     against the delay-0 one (py_cold_*); means over the repetitions; and
#     the host facts.  It predicts every row's mean and stdev% (table 1c
#     also shows the older calibration from the sequential mean; table 1e
#     the distribution of repetition 1).
#     The load average before each repetition goes to OUT/load.txt, with
#     the runnable tasks that are not the validation's (validate_load.py,
#     sampled for 1 s while none of its processes runs), so the report can
#     tell its own load (calibrate raises the 1-min average to 8-15) from
#     other jobs'; a "start" line has both before calibrate.
#  5. Seed 000 (sim/scenarios/seed000.scn) and seed 001
#     (sim/scenarios/seed001.scn) predictions vs their tables.
# Env: VALIDATE_OUT=DIR keeps the raw measurements there (default: a temp
# dir removed at exit); VALIDATE_NO_DOC=1 prints the tables without touching
# docs/ (a quick look on a busy machine).  VALIDATE_PMQOS=US holds a PM QoS
# CPU wake-up latency request of US microseconds (/dev/cpu_dma_latency, as
# cyclictest does; 0 keeps idle vCPUs polling instead of halting) for the
# whole run, calibrate and measurements; it is GLOBAL (every process on the
# host) and released at exit; the report says so (OUT/pmqos.txt).
# Needs: ./mtrace built, python3-pymongo, python3-mockupdb.  Root for sniffing.
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP"
export TOP MTRACE="$TOP/mtrace" PYTHON=/usr/bin/python3
. tests/integration/lib.sh
. tests/integration/replay_lib.sh
REPS=5
THREADS=2,4,10,20
# CPU run time (ns) of all threads of process $1 (0 if it is gone)
task_cpu_ns() {
    local f a _ sum=0
    for f in /proc/"$1"/task/*/schedstat; do
        [ -r "$f" ] && read -r a _ <"$f" || continue
        sum=$((sum + a))
    done
    echo "$sum"
}
while [ $# -gt 0 ]; do
    case "$1" in
    --reps) REPS=$2; shift 2 ;;
    --quick) REPS=1; shift ;;
    *) echo "usage: sim/validate.sh [--reps N] [--quick]" >&2; exit 2 ;;
    esac
done
OUT=${VALIDATE_OUT:-$TMP/out} # VALIDATE_OUT=DIR keeps the raw files
# On a shared machine, run what is measured (client, replay, calibrate) at a
# higher priority than the other jobs (needs root; skipped otherwise).
NICE=()
if [ "$(id -u)" = 0 ]; then NICE=(nice -n -10); fi
mkdir -p "$OUT"
[ -x "$MTRACE" ] || fail "build mtrace first (make)"
rm -f "$OUT/pmqos.txt"
if [ -n "${VALIDATE_PMQOS:-}" ]; then
    # the request lives as long as the holder keeps the file open
    "$PYTHON" -c 'import os, struct, sys, time
fd = os.open("/dev/cpu_dma_latency", os.O_WRONLY)
os.write(fd, struct.pack("i", int(sys.argv[1])))
print("held", flush=True)
time.sleep(1e6)' "$VALIDATE_PMQOS" >"$OUT/pmqos.hold" 2>&1 &
    PMQOS_PID=$!
    track_pid $PMQOS_PID
    for _ in $(seq 50); do grep -q held "$OUT/pmqos.hold" 2>/dev/null && break; sleep 0.1; done
    grep -q held "$OUT/pmqos.hold" || fail "VALIDATE_PMQOS: cannot hold /dev/cpu_dma_latency: $(cat "$OUT/pmqos.hold")"
    cur=$("$PYTHON" -c 'import struct; print(struct.unpack("i", open("/dev/cpu_dma_latency", "rb").read(4))[0])')
    echo "$VALIDATE_PMQOS $cur" >"$OUT/pmqos.txt"
    echo "== PM QoS: /dev/cpu_dma_latency held at $VALIDATE_PMQOS us (kernel applies $cur us)" >&2
fi

echo "== 1. trace for replay (pymongo -> capture -> MockupDB)" >&2
start_mock MOCK
start_capture CAP "$MOCK" "$OUT/rec.zst"
"$PYTHON" sim/validate_bench.py "mongodb://127.0.0.1:$CAP/" --seq 50 --threads 2 --calls 5 \
    >/dev/null || fail "recording run failed"
stop_wait $CAPTURE_PID || fail "capture exited $?"

echo "== 2. host facts" >&2
# the load before validate.sh's own CPU-heavy steps, and other jobs' demand
echo "start - $(cat /proc/loadavg) $("$PYTHON" sim/validate_load.py)" >>"$OUT/load.txt"
# --idle-ab: idle_wake_cpu_us (round 11), a ~2 s A/B that holds a PM QoS
# request of 0 for half of it (GLOBAL: validate.sh runs under the bench lock)
"${NICE[@]}" "$MTRACE" calibrate --idle-ab -o "$OUT/host.txt" || fail "mtrace calibrate failed"
cat "$OUT/host.txt" >&2

for d in 0 1; do
    echo "== 3. replay --delay-ms $d: $REPS repetitions" >&2
    REP=$(free_port)
    "${NICE[@]}" "$MTRACE" replay --listen 127.0.0.1:"$REP" --delay-ms "$d" --spin-us 0 \
        "$OUT/rec.zst" 2>"$OUT/replay$d.log" &
    REPLAY_PID=$! # nice execs: this is replay's pid
    track_pid $REPLAY_PID
    wait_port "$REP"
    URI="mongodb://127.0.0.1:$REP/"
    # sniffed sequential run: the server's own request->reply times
    "$MTRACE" capture --iface lo --port "$REP" -o "$OUT/seq$d.zst" 2>"$OUT/sniff$d.log" &
    SNIFF=$!
    track_pid $SNIFF
    sleep 1
    # round 14: replay's and the sniffer's CPU over the sniffed run (run time
    # of all their threads, /proc/PID/task/*/schedstat), and its client mean
    c0="$(task_cpu_ns $REPLAY_PID) $(task_cpu_ns $SNIFF)"
    "${NICE[@]}" "$PYTHON" sim/validate_bench.py "$URI" --seq-only --label sniff >"$OUT/sniffmeas$d.json" ||
        fail "sniffed run failed"
    echo "$c0 $(task_cpu_ns $REPLAY_PID) $(task_cpu_ns $SNIFF)" >"$OUT/srvcpu$d.txt"
    sleep 0.3
    kill -INT $SNIFF 2>/dev/null
    wait $SNIFF || echo "sniffing failed (see $OUT/sniff$d.log); server time from defaults" >&2
    for r in $(seq 1 "$REPS"); do
        # runnable tasks not the validation's (none of ours runs now)
        echo "d$d $r $(cat /proc/loadavg) $("$PYTHON" sim/validate_load.py)" >>"$OUT/load.txt"
        dumparg=()
        [ "$r" = 1 ] && dumparg=(--dump "$OUT/lat$d.txt")
        # delay 0: --xcore-ab, the cross-core figure also with a PM QoS request
        # of 0 held (~1 s per repetition, GLOBAL: this script runs under the
        # bench lock; round 12)
        # and (round 15) --xpair: the move between two threads, halting and
        # polling (~2 s per repetition, the request again ~1 s of it)
        xab=(--xcore)
        [ "$d" = 0 ] && xab=(--xcore-ab --xpair)
        "${NICE[@]}" "$PYTHON" sim/validate_bench.py "$URI" --threads "$THREADS" --label "d$d" "${xab[@]}" \
            "${dumparg[@]}" >>"$OUT/meas$d.jsonl" 2>>"$OUT/bench.err" ||
            fail "benchmark failed (delay $d, rep $r)"
    done
    stop_wait $REPLAY_PID
done

echo "== 3b. synthetic GIL workload (no driver, no server): $REPS repetitions" >&2
for r in $(seq 1 "$REPS"); do
    "${NICE[@]}" "$PYTHON" sim/validate_synth.py 1,2,4,10 >>"$OUT/synth.jsonl" ||
        fail "synthetic workload failed"
done

echo "== 3c. GIL hand-overs in a pymongo-shaped loop (no driver): $REPS repetitions" >&2
for r in $(seq 1 "$REPS"); do
    "${NICE[@]}" "$PYTHON" sim/validate_handover.py 1,2,4,10 >>"$OUT/handover.jsonl" ||
        fail "hand-over probe failed"
done

echo "== 4. predictions" >&2
"$PYTHON" sim/validate_report.py "$OUT" "$THREADS" ||
    fail "report failed (rerun with VALIDATE_OUT=DIR to keep the raw files)"
