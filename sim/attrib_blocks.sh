#!/usr/bin/env bash
# attrib_blocks.sh [--delay-ms D] [--threads N] [--calls K] [--pmqos US] OUTDIR
# -- where pymongo threads block and wake, against mtrace replay (round 9).
#
# Starts `mtrace replay --delay-ms D` on a trace recorded like validate.sh's
# (pymongo -> mtrace capture -> MockupDB), runs sim/attrib_blocks.py's
# client (validate_bench.py's method: 200 sequential calls, then N threads x
# K calls) under `perf record -a` with the scheduler tracepoints
# (sched_switch, sched_waking) and raw_syscalls:sys_enter/sys_exit, and
# prints sim/attrib_blocks.py's analysis: per call, where the threads block
# (GIL futex words by offset in _PyRuntime, other futexes, recvfrom, ...),
# how long, the wake-up latencies, futile GIL wakes, and the CPUs' idle
# share.  Tracing adds a few us per event, so the figures are a diagnostic
# of the mechanism, not a measurement of the rows.  --pmqos US holds a PM
# QoS request for the run (see validate.sh); it is held only while the
# lock (ATTRIB_LOCK) is, when one is given.  Needs root and perf.
# Round 16: ATTRIB_STAT=1 counts instead of recording (perf stat with filtered
# tracepoints: blocks by futex word, not slowed); ATTRIB_PREFILL=N puts N
# server sessions in pymongo's pool first (see attrib_blocks.py).
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP"
export TOP MTRACE="$TOP/mtrace" PYTHON=/usr/bin/python3
. tests/integration/lib.sh
. tests/integration/replay_lib.sh
D=0 N=10 K=200 PMQOS=
while [ $# -gt 1 ]; do
    case "$1" in
    --delay-ms) D=$2; shift 2 ;;
    --threads) N=$2; shift 2 ;;
    --calls) K=$2; shift 2 ;;
    --pmqos) PMQOS=$2; shift 2 ;;
    *) break ;;
    esac
done
[ $# = 1 ] || { echo "usage: sim/attrib_blocks.sh [--delay-ms D] [--threads N] [--calls K] [--pmqos US] OUTDIR" >&2; exit 2; }
OUT=$1
mkdir -p "$OUT"
command -v perf >/dev/null || fail "perf not found"
PMARG=()
[ -n "$PMQOS" ] && PMARG=(--pmqos "$PMQOS") # held by the client for its run
if [ ! -s "$OUT/rec.zst" ]; then
    start_mock MOCK
    start_capture CAP "$MOCK" "$OUT/rec.zst"
    "$PYTHON" sim/validate_bench.py "mongodb://127.0.0.1:$CAP/" --seq 50 --threads 2 --calls 5 \
        >/dev/null || fail "recording run failed"
    stop_wait $CAPTURE_PID || fail "capture exited $?"
fi
# ATTRIB_LOCK=FILE: hold that lock (flock) around what is measured only
LOCK=()
[ -n "${ATTRIB_LOCK:-}" ] && LOCK=(flock "$ATTRIB_LOCK")
REP=$(free_port)
nice -n -10 "$MTRACE" replay --listen 127.0.0.1:"$REP" --delay-ms "$D" --spin-us 0 "$OUT/rec.zst" \
    2>"$OUT/replay.log" &
RPID=$!
track_pid $RPID
wait_port "$REP"
if [ -n "${ATTRIB_STAT:-}" ]; then # ATTRIB_STAT=1: count with perf stat, no recording (round 16)
    # Tracepoint counters in counting mode do not change the client's switches (round 16: 11.2
    # voluntary switches per call with them, 11.0 without), where recording roughly halves them.
    # Futex wait entries by word: gil->mutex, gil->cond's __g_signals, its __g_refs (glibc
    # 2.36's group switch), and any word outside _PyRuntime (threading.Lock's sem_t: pymongo's
    # locks).  The warm-up is counted by a 1-call run and subtracted (attrib_blocks.py stat).
    RT=$("$PYTHON" -c 'import ctypes; print(ctypes.addressof(ctypes.c_char.in_dll(ctypes.pythonapi, "_PyRuntime")))')
    w() { printf '0x%x' $((RT + $1)); }
    WAIT0="(op == 0 || op == 128)" WAIT9="(op == 9 || op == 137 || op == 393)"
    EV=(-e sched:sched_switch --filter 'prev_state == 1' -e sched:sched_switch --filter 'prev_state != 1'
        -e syscalls:sys_enter_futex --filter "uaddr == $(w 0x1b8) && $WAIT0"
        -e syscalls:sys_enter_futex --filter "(uaddr == $(w 0x1b0) || uaddr == $(w 0x1b4)) && $WAIT9"
        -e syscalls:sys_enter_futex --filter "(uaddr == $(w 0x198) || uaddr == $(w 0x19c)) && $WAIT0"
        -e syscalls:sys_enter_futex --filter "(uaddr < $(w 0) || uaddr >= $(w 0x28b20)) && ($WAIT0 || $WAIT9)"
        -e syscalls:sys_exit_futex --filter 'ret == -11' -e syscalls:sys_enter_recvfrom)
    for run in base threaded; do
        n=$N k=$K
        [ $run = base ] && n=1 k=1
        "${LOCK[@]}" nice -n -10 perf stat -x, -o "$OUT/stat-$run.txt" "${EV[@]}" -- \
            "$PYTHON" sim/attrib_blocks.py client "mongodb://127.0.0.1:$REP/" --threads $n --calls $k \
            "${PMARG[@]}" --prefill-sessions "${ATTRIB_PREFILL:-0}" --server-pid $RPID \
            --out "$OUT/client-$run.json" >/dev/null || fail "perf stat failed"
    done
    "$PYTHON" sim/attrib_blocks.py stat "$OUT" | tee "$OUT/stat.txt"
    exit
fi
if [ -n "${ATTRIB_NO_PERF:-}" ]; then # ATTRIB_NO_PERF=1: CPU split only, no tracing
    "${LOCK[@]}" nice -n -10 "$PYTHON" sim/attrib_blocks.py client "mongodb://127.0.0.1:$REP/" \
        --threads "$N" --calls "$K" "${PMARG[@]}" --server-pid $RPID --out "$OUT/client.json"
    exit
fi
"${LOCK[@]}" nice -n -10 perf record -q -a -k CLOCK_MONOTONIC -o "$OUT/perf.data" \
    -e sched:sched_switch -e sched:sched_waking \
    -e raw_syscalls:sys_enter -e raw_syscalls:sys_exit -- \
    "$PYTHON" sim/attrib_blocks.py client "mongodb://127.0.0.1:$REP/" --threads "$N" \
    --calls "$K" "${PMARG[@]}" --server-pid $RPID --out "$OUT/client.json" 2>"$OUT/perf.err" || fail "perf record failed: $(tail -3 "$OUT/perf.err")"
nice -n 15 perf script -i "$OUT/perf.data" -F comm,tid,cpu,time,event,trace >"$OUT/perf.txt" 2>/dev/null ||
    fail "perf script failed"
nice -n 15 "$PYTHON" sim/attrib_blocks.py analyse "$OUT/client.json" "$OUT/perf.txt" | tee "$OUT/analysis.txt"
