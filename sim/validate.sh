#!/usr/bin/env bash
# validate.sh [--reps N] [--quick] [--no-doc] -- the validation of mtrace
# sim (docs/sim-model.md, "Validation"): measures pymongo against mtrace
# replay, predicts every measured row from the sequential runs and the host
# facts only, and regenerates the validation section of docs/sim-model.md
# (between the <!-- validation:... --> markers) and docs/sim-validation/.
# Not part of `make test`: it takes about 10 minutes and needs a quiet host.
#
#  1. A trace for mtrace replay: pymongo find_one against MockupDB
#     (tests/integration/mockmongo.py) through `mtrace capture`.
#  2. `mtrace calibrate` -> OUT/host.txt (again at the end: OUT/host-after.txt,
#     which only the report's drift line uses).
#  3. Four `mtrace replay --delay-ms D` servers, D = 0, 0.5, 1, 2; one
#     sequential run against the delay-0 one is sniffed on lo
#     (`mtrace capture --iface lo`): the server's request->reply times, the
#     --trace of every prediction (the delay is the prediction's
#     --delay-ms).
#  4. N repetitions (--reps, default 10), interleaved: in each, every delay
#     in a rotated order gets one sim/validate_bench.py process (seed 000's
#     method, pymongo 3.11 under /usr/bin/python3): 1000 sequential calls
#     (first excluded; their thread CPU per call and its cv), 300 more with
#     Topology._lock instrumented (sections per call, hold, how many before
#     the send), at delay 0 400 more in interleaved blocks moved to the other
#     of two CPUs before each call or kept on one (the cross-core cost), 20
#     connections opened (checked out at once and returned), then the
#     threaded rows 2, 4, 10, 20 threads x 100 calls with the session pool
#     trimmed to one session, and at delays 0 and 1 also 10 and 20 threads
#     with it prefilled (the session-prefill A/B), in an order that rotates
#     with the repetition.  The runnable tasks not the validation's
#     (validate_load.py) are logged before each process.
#  5. sim/validate_report.py: each repetition's rows are predicted by
#     `mtrace sim` from that repetition's own sequential rows (CPU per call,
#     its cv, mean, stdev%, lock sections and hold at the row's delay; the
#     CPU per call at every delay, the idle curve; the delay-0 run's
#     cross-core CPU) with the host facts and
#     the sniffed trace: both prefill arms from the same calibration; per
#     row a verdict from the 90 % interval of the paired log(predicted /
#     measured) over the repetitions.
# Env: VALIDATE_OUT=DIR keeps the raw measurements there (default: a temp
# dir removed at exit).  --no-doc prints the report without touching docs/.
# Needs: ./mtrace built, python3-pymongo, python3-mockupdb; root for sniffing
# (without it the model's default server time is used and the report says so).
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP"
export TOP MTRACE="$TOP/mtrace" PYTHON=/usr/bin/python3
. tests/integration/lib.sh
. tests/integration/replay_lib.sh
REPS=10
NODOC=
DELAYS=(0 0.5 1 2)
while [ $# -gt 0 ]; do
    case "$1" in
    --reps) REPS=$2; shift 2 ;;
    --quick) REPS=1; shift ;;
    --no-doc) NODOC=--no-doc; shift ;;
    *) echo "usage: sim/validate.sh [--reps N] [--quick] [--no-doc]" >&2; exit 2 ;;
    esac
done
case "$REPS" in '' | *[!0-9]* | 0) echo "validate.sh: --reps wants a count >= 1" >&2; exit 2 ;; esac
SEQ=${VALIDATE_SEQ:-1000}     # smoke runs on a busy host: fewer calls
CALLS=${VALIDATE_CALLS:-100}
OUT=${VALIDATE_OUT:-$TMP/out}
# what is measured runs at a higher priority than other jobs (root only)
NICE=()
if [ "$(id -u)" = 0 ]; then NICE=(nice -n -10); fi
mkdir -p "$OUT"
[ -x "$MTRACE" ] || fail "build mtrace first (make)"
rm -f "$OUT/meas.jsonl" "$OUT/load.txt" "$OUT/bench.err" "$OUT/failed.txt"
bench() { "${NICE[@]}" "$PYTHON" sim/validate_bench.py "$@"; }
# the host's steal: /proc/stat's busy (user nice system irq softirq) and
# steal jiffies of all CPUs, so the report can say how much of the CPU time
# the VM asked for the hypervisor gave to others
cpu_jiffies() { awk '/^cpu / {printf "busy=%d steal=%d", $2 + $3 + $4 + $7 + $8, $9}' /proc/stat; }
load_line() { echo "$1 $(cat /proc/loadavg) $("$PYTHON" sim/validate_load.py) $(cpu_jiffies)" >>"$OUT/load.txt"; }

echo "== 1. trace for replay (pymongo -> capture -> MockupDB)" >&2
start_mock MOCK
start_capture CAP "$MOCK" "$OUT/rec.zst"
bench "mongodb://127.0.0.1:$CAP/" --seq 50 --locks 0 --rows 2 --calls 5 >/dev/null ||
    fail "recording run failed"
stop_wait $CAPTURE_PID || fail "capture exited $?"

echo "== 2. host facts" >&2
load_line start
"${NICE[@]}" "$MTRACE" calibrate -o "$OUT/host.txt" || fail "mtrace calibrate failed"
cat "$OUT/host.txt" >&2

echo "== 3. servers: mtrace replay --delay-ms ${DELAYS[*]}" >&2
declare -A URI
for d in "${DELAYS[@]}"; do
    start_replay PORT "$OUT/rec.zst" --delay-ms "$d" --spin-us 0
    URI[$d]="mongodb://127.0.0.1:$PORT/"
done
SNIFF_PORT=${URI[0]#mongodb://127.0.0.1:}
SNIFF_PORT=${SNIFF_PORT%/}
"$MTRACE" capture --iface lo --port "$SNIFF_PORT" -o "$OUT/seq0.zst" 2>"$OUT/sniff.log" &
SNIFF=$!
track_pid $SNIFF
sleep 1
bench "${URI[0]}" --seq "$SEQ" --locks 0 --seq-only --label sniff >"$OUT/sniff.jsonl" ||
    fail "sniffed run failed"
sleep 0.3
kill -INT $SNIFF 2>/dev/null
wait $SNIFF || { echo "sniffing failed (see $OUT/sniff.log): server time from defaults" >&2; rm -f "$OUT/seq0.zst"; }

echo "== 4. $REPS repetitions x delays ${DELAYS[*]}" >&2
rotate() { # rotate N WORDS...: the words rotated left by N
    local n=$1; shift
    local a=("$@") k=${#a[@]} i out=()
    for ((i = 0; i < k; i++)); do out+=("${a[$(((i + n) % k))]}"); done
    echo "${out[*]}"
}
for r in $(seq 1 "$REPS"); do
    for d in $(rotate $((r - 1)) "${DELAYS[@]}"); do
        case "$d" in
        0 | 1) rows=(2 4 10 10p 20 20p) ;;
        *) rows=(2 4 10 20) ;;
        esac
        order=$(rotate $((r - 1)) "${rows[@]}")
        load_line "d$d r$r"
        echo "   rep $r delay $d rows ${order// /,}" >&2
        # a failed process loses its rows of this repetition (the report
        # pairs what is there and counts the failures), not the whole run
        xcore=()
        [ "$d" = 0 ] && xcore=(--xcore 400)
        bench "${URI[$d]}" --seq "$SEQ" --locks 300 "${xcore[@]}" --warm 20 --calls "$CALLS" \
            --rows "${order// /,}" --label "d$d-r$r" >>"$OUT/meas.jsonl" 2>>"$OUT/bench.err" || {
            echo "benchmark failed (delay $d, rep $r): $(tail -3 "$OUT/bench.err")" >&2
            echo "d$d-r$r" >>"$OUT/failed.txt"
        }
    done
done
load_line end
"${NICE[@]}" "$MTRACE" calibrate -o "$OUT/host-after.txt" ||
    echo "the second calibrate failed: no drift line" >&2

echo "== 5. predictions and report" >&2
"$PYTHON" sim/validate_report.py $NODOC "$OUT" ||
    fail "report failed (rerun with VALIDATE_OUT=DIR to keep the raw files)"
