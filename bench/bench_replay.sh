#!/usr/bin/env bash
# bench_replay.sh -- mtrace replay benchmarks (never part of `make test`).
#
#  1. seed 000's pymongo benchmark (sequential 1000 calls, 10 threads x 100)
#     against the minimal C fixed-reply server (tests/helpers/fixedsrv.c, the
#     floor), mtrace replay --delay-ms 0, --delay-ms 1, and --delay-ms 1
#     --delay-mode serial (seed 000's Go proxy behaviour): seed 000's table.
#  2. delay precision with a C client (bench/replay_load.c): requested 0.1,
#     1 and 5 ms at 1 and 64 connections; achieved (server: request's last
#     byte read -> the reply's write() starts) and client round trip minus
#     the --delay-ms 0 one, for a sleeping and a busy-polling client;
#     2b: --spin-us 0 / 50 / auto side by side with the server's CPU;
#     2c: the machine's timer wake-up lateness (bench/timer_wake.c);
#     2d: at 64 connections, lateness split into first-of-batch (wake-up,
#     CPU) and queued-behind-other-writes, for 1 loop / one per core and
#     normal / --rt-prio 1 scheduling.
#     Section 2 has rows with --rt-prio 1 (SCHED_FIFO loops) too, and rows
#     with a PM QoS CPU wake-up latency request of 0 us held (mtrace replay
#     --cpu-dma-latency 0; timer_wake --cpu-dma-latency 0 in 2c): the
#     request is machine-wide, so the client runs under it too.
#     (Table 1 has no PM QoS rows: pymongo's added delay at --delay-ms 1
#     with the request held is in docs/replay.md, "What a client sees".)
#  3. throughput: replay_load at 16 and 256 connections against replay
#     (--threads 1 / one loop per core, normal / --rt-prio 1) and against
#     the fixed-reply server.
#
#     BUILD=build/release bench/bench_replay.sh [--quick] [--spin-us N|auto]
#                                               [--precision-only]
# (--precision-only: section 2 alone, for quick A/B runs)
# The trace is recorded first through `mtrace capture` from MockupDB.
# Prints markdown tables (docs/benchmarks.md keeps a run).
set -u
cd "$(dirname "$0")/.."
TOP=$PWD
BUILD=${BUILD:-build/release}
MT=$TOP/mtrace
PY=/usr/bin/python3
SECS=3
ROUNDS=3
SPIN=()
ONLY_PRECISION=0
SPIN_LABEL="auto (default)"
while [ $# -gt 0 ]; do
    case $1 in
    --quick) SECS=1; ROUNDS=1 ;;
    --precision-only) ONLY_PRECISION=1 ;;
    --spin-us) SPIN=(--spin-us "$2"); SPIN_LABEL="$2"; shift ;;
    esac
    shift
done
BENCH_NAME=bench_replay
WAIT_PORT_TRIES=500 # 10 s
. "$TOP/bench/common.sh"
for b in "$BUILD/helpers/fixedsrv" "$BUILD/bench/replay_load" "$BUILD/bench/timer_wake" "$MT"; do
    [ -x "$b" ] || die "$b missing (make all $BUILD/helpers/fixedsrv $BUILD/bench/replay_load $BUILD/bench/timer_wake)"
done

# ---- record the trace ----
$PY tests/integration/mockmongo.py --port 0 >"$TMP/mock.out" 2>/dev/null &
PIDS+=($!)
for _ in $(seq 100); do grep -q READY "$TMP/mock.out" && break; sleep 0.05; done
MOCK=$(awk '/READY/ {print $2}' "$TMP/mock.out")
CAP=$(free_port)
"$MT" capture --listen 127.0.0.1:$CAP --target 127.0.0.1:$MOCK -o "$TMP/seed.zst" 2>/dev/null &
CPID=$!
wait_port $CAP
$PY bench/seed000_bench.py "mongodb://127.0.0.1:$CAP/" capture >/dev/null || die "capture run failed"
kill $CPID; wait $CPID
echo "trace: $("$MT" stats "$TMP/seed.zst" 2>/dev/null | head -3 | tr '\n' ' ')"

start_replay() { # PORTVAR JSON args...
    local var=$1 json=$2 port; shift 2
    port=$(free_port)
    "$MT" replay --listen 127.0.0.1:$port --summary-json "$json" "$@" "$TMP/seed.zst" 2>"$json.log" &
    RPID=$!
    PIDS+=($RPID)
    wait_port $port
    printf -v "$var" '%s' "$port"
}
stop_replay() { kill $RPID; wait $RPID; }
start_fixed() {
    "$BUILD/helpers/fixedsrv" --threads 1 >"$TMP/fixed.out" &
    FPID=$!
    PIDS+=($FPID)
    for _ in $(seq 100); do grep -q READY "$TMP/fixed.out" && break; sleep 0.05; done
    FIXED=$(awk '/READY/ {print $2}' "$TMP/fixed.out")
}

if [ $ONLY_PRECISION = 0 ]; then
echo
echo "## 1. seed 000 benchmark (pymongo $($PY -c 'import pymongo; print(pymongo.version)'), $(nproc) cores)"
echo
# ROUNDS interleaved rounds (the machine may be shared): each scenario's
# row is the round with its median sequential mean.
start_fixed
for round in $(seq $ROUNDS); do
    $PY bench/seed000_bench.py "mongodb://127.0.0.1:$FIXED/" "fixed-reply server (floor)" |
        sed "s/^{/{\"round\": $round, /" >>"$TMP/seed.rows"
    for args in "0" "1" "1 --delay-mode serial"; do
        # shellcheck disable=SC2086
        start_replay P "$TMP/s.json" --delay-ms $args "${SPIN[@]}"
        $PY bench/seed000_bench.py "mongodb://127.0.0.1:$P/" "replay --delay-ms $args" |
            sed "s/^{/{\"round\": $round, /" >>"$TMP/seed.rows"
        stop_replay
    done
done
$PY - "$TMP/seed.rows" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
labels = list(dict.fromkeys(r["label"] for r in rows))
pick = {}
for lab in labels:
    seq = sorted((r for r in rows if r["label"] == lab and r["mode"] == "sequential"),
                 key=lambda r: r["mean_ms"])
    rnd = seq[len(seq) // 2]["round"]
    pick[lab] = {r["mode"]: r for r in rows if r["label"] == lab and r["round"] == rnd}
print("| Scenario | n | Mean (ms) | Stdev (% of mean) |")
print("|---|---|---|---|")
for lab in labels:
    for mode in ("sequential", "threaded"):
        r = pick[lab][mode]
        print(f"| {lab} — {mode} | {r['n']} | {r['mean_ms']:.3f} | {r['stdev_pct']:.1f}% |")
allseq = lambda lab: [r["mean_ms"] for r in rows if r["label"] == lab and r["mode"] == "sequential"]
floor = statistics.median(allseq("fixed-reply server (floor)"))
rep = statistics.median(allseq("replay --delay-ms 0"))
d1 = statistics.median(allseq("replay --delay-ms 1"))
print()
print(f"medians over {max(r['round'] for r in rows)} rounds: sequential mean floor {floor:.3f} ms, "
      f"replay {rep:.3f} ms = {100 * rep / floor:.1f}% of the floor (target <= 105%); "
      f"--delay-ms 1 adds {d1 - rep:.3f} ms (target 1 +- 0.02)")
PY
fi # ONLY_PRECISION

echo
echo "## 2. delay precision (C client, replay_load, ${SECS}s each, spin ${SPIN_LABEL})"
echo
echo "Server achieved = request's last byte read -> the reply's write() starts;"
echo "late = achieved - requested.  write() = how long that write() took"
echo "(loopback: it also runs the client's receive path).  Client columns are"
echo "the round trip replay_load sees minus the same client's p50 round trip"
echo "at --delay-ms 0: 'sleep' is the client blocking in epoll_wait (its own"
echo "wake-up lateness is included), 'busy' polls (one core)."
echo
echo "Scheduling: 'normal' (CFS), or '--rt-prio 1' (every loop thread under"
echo "SCHED_FIFO 1: it preempts the client and other processes)."
echo "PM QoS: 'off', or '0 us' (mtrace replay --cpu-dma-latency 0: idle CPUs"
echo "poll instead of halting, machine-wide, so for the client too)."
echo
echo "| requested | conns | scheduling | PM QoS | server achieved p50 | p99 | late p50 | late p99 | write() p50 | client sleep: RTT p50 - base | p99 - base | client busy: RTT p50 - base | p99 - base | server CPU | target p50 <= | target p99 <= |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
cpu_ticks() { awk '{print $14 + $15}' /proc/"$1"/stat; }
# run_load OUT CONNS DELAY BUSY(''|--busy) [replay args]: one replay + one load
run_load() {
    local out=$1 c=$2 d=$3 busy=$4 t0 t1; shift 4
    start_replay P "$out.srv" --delay-ms "$d" "$@"
    t0=$(cpu_ticks $RPID)
    "$BUILD/bench/replay_load" $P $c $SECS 0.5 $busy >"$out.cli"
    t1=$(cpu_ticks $RPID)
    stop_replay
    echo "$(( t1 - t0 ))" >"$out.cpu"
}
for c in 1 64; do
  for rt in 0 1; do
   for pm in off 0; do
    RT=() PM=()
    [ $rt = 1 ] && RT=(--rt-prio 1)
    [ $pm = 0 ] && PM=(--cpu-dma-latency 0)
    run_load "$TMP/base.sleep.$c" $c 0 "" "${SPIN[@]}" "${RT[@]}" "${PM[@]}"
    run_load "$TMP/base.busy.$c" $c 0 --busy "${SPIN[@]}" "${RT[@]}" "${PM[@]}"
    for d in 0.1 1 5; do
        run_load "$TMP/d.sleep" $c $d "" "${SPIN[@]}" "${RT[@]}" "${PM[@]}"
        run_load "$TMP/d.busy" $c $d --busy "${SPIN[@]}" "${RT[@]}" "${PM[@]}"
        $PY - "$d" "$c" "$TMP" "$SECS" "$(getconf CLK_TCK)" "$rt" "$pm" <<'PY'
import json, sys
d, c, t = float(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
secs, tck = float(sys.argv[4]), int(sys.argv[5])
sched = "--rt-prio 1" if sys.argv[6] == "1" else "normal"
pmq = "0 us" if sys.argv[7] == "0" else "off"
js = lambda p: json.load(open(p))
s = js(f"{t}/d.sleep.srv")
a, late, w = s["achieved"], s["late"], s["write"]
cpu = int(open(f"{t}/d.sleep.cpu").read()) / tck / (secs + 0.5) * 100
def rel(mode):
    l, b = js(f"{t}/d.{mode}.cli"), js(f"{t}/base.{mode}.{c}.cli")
    return (l["rtt_p50_us"] - b["rtt_p50_us"]) / 1000, (l["rtt_p99_us"] - b["rtt_p50_us"]) / 1000
(s50, s99), (b50, b99) = rel("sleep"), rel("busy")
t50, t99 = d * 1.01 + 0.010, d * 1.05 + 0.050
ok = lambda v, t: f"{v:.4f}" + ("" if v <= t else " (over)")
print(f"| {d} ms | {c} | {sched} | {pmq} | {ok(a['p50_ms'], t50)} | {ok(a['p99_ms'], t99)} | {late['p50_ms']*1000:.1f} us "
      f"| {late['p99_ms']*1000:.1f} us | {w['p50_ms']*1000:.1f} us | {ok(s50, t50)} | {ok(s99, t99)} "
      f"| {ok(b50, t50)} | {ok(b99, t99)} | {cpu:.0f}% | {t50:.4f} | {t99:.4f} |")
PY
    done
   done
  done
done

echo
echo "## 2b. spin modes side by side (server achieved, sleeping client, ${SECS}s each)"
echo
echo "Server CPU = the replay process's utime+stime over the run / wall time"
echo "(100% = one core).  wake-up = how late the loop's timerfd woke it"
echo "(p50/p99 of its last 256 wake-ups); window = the spin window at exit;"
echo "read lag = kernel receive of a request's last byte -> the read() whose"
echo "time starts its delay (not part of achieved; a sleeping loop wakes late"
echo "for I/O too)."
echo
echo "| requested | conns | --spin-us | achieved p50 | p99 | late p50 | late p99 | wake-up p50 / p99 us | window us | read lag p50 / p99 us | server CPU |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for cd in "1 1" "1 0.1" "64 1" "64 0.1" "64 1 1" "64 0.1 1"; do
    read -r c d th <<<"$cd"
    spins="0 50 auto"
    [ -n "$th" ] && spins=auto # --threads 1: one loop spins, the client keeps a core
    for spin in $spins; do
        run_load "$TMP/sp" $c $d "" --spin-us $spin ${th:+--threads $th}
        $PY - "$d" "$c" "$spin${th:+ (--threads $th)}" "$TMP" "$SECS" "$(getconf CLK_TCK)" <<'PY'
import json, sys
d, c, spin, t = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
secs, tck = float(sys.argv[5]), int(sys.argv[6])
s = json.load(open(f"{t}/sp.srv"))
a, late, w, rl = s["achieved"], s["late"], s["wake"], s["read_lag"]
cpu = int(open(f"{t}/sp.cpu").read()) / tck / (secs + 0.5) * 100
print(f"| {d} ms | {c} | {spin} | {a['p50_ms']:.4f} | {a['p99_ms']:.4f} | {late['p50_ms']*1000:.1f} us "
      f"| {late['p99_ms']*1000:.1f} us | {w['p50_us']:.1f} / {w['p99_us']:.1f} | {w['spin_us']:.1f} "
      f"| {rl['p50_ms']*1000:.1f} / {rl['p99_ms']*1000:.1f} | {cpu:.0f}% |")
PY
    done
done

echo
echo "## 2c. timer wake-up lateness on this machine (bench/timer_wake.c)"
echo
"$BUILD/bench/timer_wake" --n $((SECS * 700)) --delay-us 1000
echo
"$BUILD/bench/timer_wake" --n $((SECS * 700)) --delay-us 1000 --rt-prio 1
echo
"$BUILD/bench/timer_wake" --n $((SECS * 700)) --delay-us 1000 --cpu-dma-latency 0
echo
"$BUILD/bench/timer_wake" --n $((SECS * 700)) --delay-us 1000 --rt-prio 1 --cpu-dma-latency 0
echo
echo "## 2d. 64 connections: where the lateness comes from (sleeping client, ${SECS}s each)"
echo
echo "Each timed release is either the first of its loop's timer batch (late"
echo "because the loop woke, or got the CPU, late) or queued behind earlier"
echo "releases of the same batch (each write() ~3 us; loop.h"
echo "loop_timer_batch_pos).  first / queued = share of the releases and"
echo "their late p99.  conns/loop = fewest..most connections a loop accepted"
echo "(SO_REUSEPORT hash, then the accept hand-off).  Client = replay_load's own round trip (its"
echo "one thread handles the 64 replies of a burst one by one) and ops/s."
echo
echo "| requested | loops | scheduling | PM QoS | late p50 | late p99 | first: share, late p99 | queued: share, late p99 | largest batch | conns/loop | wake-up p50 / p99 us | window us | server CPU | client RTT p50 / p99 ms | client ops/s |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for d in 0.1 1 5; do
    for th in "" 1; do
        for rt in 0 1; do
          for pm in off 0; do
            run_load "$TMP/bd" 64 $d "" "${SPIN[@]}" ${th:+--threads $th} $([ $rt = 1 ] && echo --rt-prio 1) $([ $pm = 0 ] && echo --cpu-dma-latency 0)
            $PY - "$d" "${th:-$(nproc) (default)}" "$rt" "$TMP" "$SECS" "$(getconf CLK_TCK)" "$pm" <<'PY'
import json, sys
d, th, rt, t = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
pmq = "0 us" if sys.argv[7] == "0" else "off"
secs, tck = float(sys.argv[5]), int(sys.argv[6])
s, cl = json.load(open(f"{t}/bd.srv")), json.load(open(f"{t}/bd.cli"))
late, f, q, w = s["late"], s["late_first"], s["late_queued"], s["wake"]
n = max(1, f["n"] + q["n"])
cpu = int(open(f"{t}/bd.cpu").read()) / tck / (secs + 0.5) * 100
sched = "--rt-prio 1" if rt == "1" else "normal"
print(f"| {d} ms | {th} | {sched} | {pmq} | {late['p50_ms']*1000:.1f} us | {late['p99_ms']*1000:.1f} us "
      f"| {100*f['n']/n:.0f}%, {f['p99_ms']*1000:.1f} us | {100*q['n']/n:.0f}%, {q['p99_ms']*1000:.1f} us "
      f"| {s['batch_max']} | {s['loop_conns_min']}..{s['loop_conns_max']} | {w['p50_us']:.1f} / {w['p99_us']:.1f} "
      f"| {w['spin_us']:.0f} | {cpu:.0f}% | {cl['rtt_p50_us']/1000:.3f} / {cl['rtt_p99_us']/1000:.3f} | {cl['ops_per_s']:.0f} |")
PY
          done
        done
    done
done

[ $ONLY_PRECISION = 1 ] && exit 0

echo
echo "## 3. throughput (replay_load, closed loop, ${SECS}s, ops/s)"
echo
echo "Server CPU per request (utime+stime from /proc over the run) is less"
echo "sensitive to other load on the machine than ops/s."
echo
echo "| conns | fixed-reply server ops/s (CPU us/op) | replay --threads 1 | replay (one loop per core) | replay --threads 1 --rt-prio 1 | replay --rt-prio 1 (one loop per core) | replay/fixed ops (best without RT) |"
echo "|---|---|---|---|---|---|---|"
measure() { # PID PORT CONNS -> "ops cpu_us_per_op"
    local t0 t1 ops
    t0=$(cpu_ticks "$1")
    ops=$("$BUILD/bench/replay_load" "$2" "$3" $SECS | $PY -c 'import json,sys; print(json.load(sys.stdin)["ops_per_s"])')
    t1=$(cpu_ticks "$1")
    $PY -c "o=$ops; print(o, (($t1-$t0)/$(getconf CLK_TCK))*1e6/(o*($SECS+0.5)) if o else 0)"
}
for c in 16 256; do
    read -r f fc <<<"$(measure $FPID $FIXED $c)"
    start_replay P "$TMP/t.json" --threads 1
    read -r r1 r1c <<<"$(measure $RPID $P $c)"
    stop_replay
    start_replay P "$TMP/t.json"
    read -r rn rnc <<<"$(measure $RPID $P $c)"
    stop_replay
    start_replay P "$TMP/t.json" --threads 1 --rt-prio 1
    read -r q1 q1c <<<"$(measure $RPID $P $c)"
    stop_replay
    start_replay P "$TMP/t.json" --rt-prio 1
    read -r qn qnc <<<"$(measure $RPID $P $c)"
    stop_replay
    $PY -c "f,a,b,x,y=$f,$r1,$rn,$q1,$qn; print(f'| $c | {f:.0f} ({$fc:.1f}) | {a:.0f} ({$r1c:.1f}) | {b:.0f} ({$rnc:.1f}) | {x:.0f} ({$q1c:.1f}) | {y:.0f} ({$qnc:.1f}) | {100*max(a,b)/f:.0f}% (target >= 80%) |')"
done
echo
"$BUILD/bench/bench_replay_conn" 2>/dev/null || true
