#!/usr/bin/env bash
# test_sim_cli.sh -- mtrace sim / mtrace calibrate end to end: help covers
# every option, the parameter table, byte-identical output for the same
# seed, the one-line what-if and its sweep, intervals, bounds and the
# binding resource, scenario files with calibration, a real trace as
# service times, host facts from mtrace calibrate, herd model, plots, and
# clear errors.
. "$(dirname "$0")/lib.sh"
S="$MTRACE sim"

# --help documents every long option the parser accepts: the names are read
# from the parsers' option tables (sim/sim_cli.c, sim/calibrate.c)
opts() { # file: the long option names of its `struct option lo[]`
    sed -n '/struct option lo\[\]/,/};/p' "$1" | grep -o '{"[a-z-]*"' | tr -d '{"'
}
"$MTRACE" sim --help >"$TMP/help" || fail "sim --help exit $?"
n=0
for o in $(opts "$TOP/sim/sim_cli.c"); do
    grep -q -- "--$o\b" "$TMP/help" || fail "sim --help does not document --$o"
    n=$((n + 1))
done
[ "$n" -ge 18 ] || fail "read only $n options from sim/sim_cli.c"
"$MTRACE" calibrate --help >"$TMP/chelp" || fail "calibrate --help exit $?"
n=0
for o in $(opts "$TOP/sim/calibrate.c"); do
    grep -q -- "--$o\b" "$TMP/chelp" || fail "calibrate --help does not document --$o"
    n=$((n + 1))
done
[ "$n" -ge 3 ] || fail "read only $n options from sim/calibrate.c"
# --list-params: the one table (unit, default, origin, meaning, source); it
# gives every parameter a run prints (both models) a meaning, and the run
# prints each with an origin; the contention model has at most 15
$S --list-params >"$TMP/list" || fail "--list-params exit $?"
$S --set calls=2 >"$TMP/pc" || fail "contention defaults"
$S --set model=herd --set herd.requests=50 >"$TMP/ph" || fail "herd defaults"
n=0
for k in $(sed -n 's/^#   \([a-z_.]*\) *= .*/\1/p' "$TMP/pc" "$TMP/ph"); do
    grep -Eq "^  $k +([a-z]+ +)?[^ ].{8,}" "$TMP/list" ||
        fail "--list-params gives $k no meaning"
    n=$((n + 1))
done
[ "$n" -ge 35 ] || fail "only $n parameters in the parameter blocks"
bad=$(grep '^#   ' "$TMP/pc" "$TMP/ph" |
    grep -Ev '= +[^ ]+ +\[(source|assumption|measured|trace|calibrated|scenario|cli)\]') &&
    fail "parameters without an origin: $bad"
np=$(sed -n 's/^contention model: \([0-9]*\) parameters$/\1/p' "$TMP/list")
[ -n "$np" ] && [ "$np" -le 15 ] || fail "contention model: '$np' parameters (at most 15)"
[ "$(sed -n '/^contention model:/,/^setup/p' "$TMP/list" | grep -c 'set by: ')" = "$np" ] ||
    fail "--list-params: a model parameter without its source"
for k in model calibrate.seq_mean_ms calibrate.seq_cpu_us calibrate_from measured.mean_ms trace; do
    grep -q "^  $k " "$TMP/list" || fail "--list-params lacks the scenario key $k"
done

# determinism: same inputs -> same bytes; another seed -> other numbers
SCN=$TOP/sim/scenarios/seed000.scn
$S --scenario "$SCN" --json >"$TMP/a.json" 2>"$TMP/a.params" || fail "seed000 run"
$S --scenario "$SCN" --json >"$TMP/b.json" 2>"$TMP/b.params" || fail "seed000 rerun"
cmp -s "$TMP/a.json" "$TMP/b.json" || fail "same seed, different output"
cmp -s "$TMP/a.params" "$TMP/b.params" || fail "same seed, different parameter block"
[ "$(wc -l <"$TMP/a.json")" = 8 ] || fail "seed000: expected 8 rows"
$S --scenario "$SCN" --json --seed 2 >"$TMP/c.json" 2>/dev/null || fail "seed 2"
cmp -s "$TMP/a.json" "$TMP/c.json" && fail "--seed 2 gave the same output as seed 1"
grep -q '"seed":2' "$TMP/c.json" || fail "seed not in the JSON rows"
for k in scenario runtime proxy_delay_ms threads calls mean_ms stdev_pct p50_ms p99_ms seed; do
    grep -q "\"$k\":" "$TMP/a.json" || fail "JSON lacks $k"
done
grep -q 'py_call_us.*\[calibrated\] solved so the sequential mean is 0.2970 ms' "$TMP/a.params" ||
    fail "sequential origin not printed"
grep -q 'cores .*\[assumption\]' "$TMP/a.params" || fail "assumption origin not printed"
for k in mean_lo_ms mean_hi_ms stdev_pct_lo stdev_pct_hi p99_lo_ms p99_hi_ms binding util bound runs; do
    grep -q "\"$k\":" "$TMP/a.json" || fail "JSON lacks $k"
done
# the mechanism's direction, facts fixed: with cores to spare, 10 threads
# under the GIL are far slower than free-threaded ones (the GIL binds)
for rt in gil free-threaded; do
    $S --seq-mean-ms 0.3 --threads 10 --runtime $rt --set cores=16 --seeds 3 --json \
        --no-params 2>/dev/null >"$TMP/dir-$rt.json" || fail "direction $rt"
done
gil=$(jq .mean_ms "$TMP/dir-gil.json")
ft=$(jq .mean_ms "$TMP/dir-free-threaded.json")
awk -v g="$gil" -v f="$ft" 'BEGIN { exit !(g > 3 * f) }' || fail "GIL $gil not slower than FT $ft"
[ "$(jq -r .binding "$TMP/dir-gil.json")" = gil ] || fail "GIL row: binding not gil"

# the one-line what-if: no scenario file; without --host it says the host
# facts are placeholders; intervals around the median; several sequential
# repetitions are several calibrations
$S --seq-mean-ms 0.25 --threads 20 --delay-ms 2 --runtime free-threaded >"$TMP/one.out" 2>"$TMP/one.err" ||
    fail "one-liner exit $?: $(cat "$TMP/one.err")"
grep -q 'placeholders' "$TMP/one.err" || fail "one-liner without --host: no placeholder note"
grep -Eq '^sim +ft +2 +20 +[0-9.]+ \[[0-9.]+-[0-9.]+\]' "$TMP/one.out" ||
    fail "one-liner row: $(cat "$TMP/one.out")"
$S --seq-mean-ms 0.25,0.27,0.26 --seq-stdev-pct 30,35,32 --threads 4 --seeds 4 --json \
    --no-params >"$TMP/cal3.json" 2>/dev/null || fail "three calibrations"
[ "$(jq .calibrations "$TMP/cal3.json")" = 3 ] || fail "not 3 calibrations"
[ "$(jq .runs "$TMP/cal3.json")" = 12 ] || fail "not 12 runs"
jq -e '.mean_lo_ms <= .mean_ms and .mean_ms <= .mean_hi_ms and .mean_lo_ms < .mean_hi_ms' \
    "$TMP/cal3.json" >/dev/null || fail "interval does not hold the median: $(cat "$TMP/cal3.json")"
$S --seq-mean-ms 0.25 --sweep --seeds 2 --csv --no-params >"$TMP/dsweep.csv" 2>/dev/null ||
    fail "--sweep without values"
[ "$(wc -l <"$TMP/dsweep.csv")" = 17 ] || fail "--sweep: expected header + 16 rows"
grep -q '^sim threads=20 delay=2,gil,deadline,2,20,' "$TMP/dsweep.csv" || fail "default sweep row"
# the session pool: prefilled, the driver lock stops blocking; without it
# nearly every call has an acquire that blocks (an acquire counts once,
# however often it sleeps again)
for sp in 1 20; do
    $S --seq-mean-ms 0.25 --threads 20 --lock-sections 4 --lock-hold-us 5 --session-prefill $sp \
        --seeds 2 --json --no-params 2>/dev/null >"$TMP/sp$sp.json" || fail "session-prefill $sp"
done
jq -e '.lock_blocks_per_call > 0.9' "$TMP/sp1.json" >/dev/null || fail "no convoy without prefill"
jq -e '.lock_blocks_per_call < 0.1' "$TMP/sp20.json" >/dev/null || fail "convoy with prefill"

# sweep and CSV; host facts from mtrace calibrate; a real trace
"$MTRACE" calibrate -o "$TMP/host.txt" || fail "calibrate exit $?"
grep -q '^gil_handoff_us = .* \[measured\]' "$TMP/host.txt" || fail "no GIL hand-off in host facts"
$S --host "$TMP/host.txt" --seq-mean-ms 2 --threads 4 --no-params >/dev/null 2>"$TMP/h.err" ||
    fail "--host exit $?"
! grep -Eq 'facts .*\b(cores|sys_us|wake_us|gil_handoff_us)\b.* placeholders' "$TMP/h.err" ||
    fail "--host: measured facts called placeholders: $(cat "$TMP/h.err")"
$S --host "$TMP/host.txt" --seq-mean-ms 2 --sweep threads=1,2,4,10,20 delay=0,1 --csv >"$TMP/sweep.csv" 2>"$TMP/sweep.params" ||
    fail "sweep exit $?: $(cat "$TMP/sweep.params")"
[ "$(wc -l <"$TMP/sweep.csv")" = 11 ] || fail "sweep: expected header + 10 rows"
head -1 "$TMP/sweep.csv" | grep -q '^scenario,runtime,proxy,proxy_delay_ms,threads' || fail "csv header"
grep -q 'sim threads=20 delay=1,gil,deadline,1,20' "$TMP/sweep.csv" || fail "sweep row missing"
grep -q 'gil_handoff_us .*\[measured\]' "$TMP/sweep.params" || fail "measured origin missing"
$S --trace "$TOP/tests/data/traces/v1_scenario.zst" 2>&1 |
    grep -q 'server_us .*\[trace\] [0-9]* request->reply latencies' || fail "trace origin missing"
# A damaged frame in --trace: the reader resynchronises and sim keeps the
# samples of every intact frame, after the damage too (it used to stop at
# the damage: mktrace's second frame damaged left none and exited 1).
"$TOP/${BUILD:-build/release}/helpers/mktrace" "$TMP/mk.zst" >/dev/null || fail "mktrace"
$PYTHON -c "import sys; b=bytearray(open(sys.argv[1],'rb').read()); b[200]^=0x10; open(sys.argv[2],'wb').write(b)" \
    "$TMP/mk.zst" "$TMP/mkflip.zst"
$S --trace "$TMP/mkflip.zst" >"$TMP/flip.out" 2>&1 || fail "damaged --trace: exit $?: $(cat "$TMP/flip.out")"
grep -q 'damaged frame(s) skipped; using the [0-9]* samples of the intact ones' "$TMP/flip.out" ||
    fail "damaged --trace: no skip warning: $(grep sim: "$TMP/flip.out")"
nflip=$(sed -n 's/.*\[trace\] \([0-9]*\) request->reply latencies.*/\1/p' "$TMP/flip.out")
nfull=$($S --trace "$TMP/mk.zst" 2>&1 | sed -n 's/.*\[trace\] \([0-9]*\) request->reply latencies.*/\1/p')
[ -n "$nflip" ] && [ -n "$nfull" ] && [ "$nflip" -gt 0 ] && [ "$nflip" -lt "$nfull" ] ||
    fail "damaged --trace: $nflip samples of $nfull"

# herd model (small), plot
cat >"$TMP/herd.scn" <<'X'
model = herd
herd.requests = 2000
[few]
herd.procs = 16
[many]
herd.procs = 512
[many-lock]
herd.procs = 512
herd.lock = 1
X
$S --scenario "$TMP/herd.scn" --json 2>/dev/null >"$TMP/herd.json" || fail "herd run"
few=$(grep '"few"' "$TMP/herd.json" | jq .total_s)
many=$(grep '"many"' "$TMP/herd.json" | jq .total_s)
lock=$(grep '"many-lock"' "$TMP/herd.json" | jq .total_s)
awk -v a="$few" -v b="$many" -v c="$lock" 'BEGIN { exit !(b > 2 * a && c < b) }' ||
    fail "herd: 16 procs $few s, 512 $many s, 512 locked $lock s"
printf 'measured 0.5\nmeasured 0.7\n' >"$TMP/meas.txt"
$S --set threads=4 --set calls=50 --plot "$TMP/cdf.png" --measured "$TMP/meas.txt" --no-params \
    >/dev/null || fail "plot exit $?"
[ "$(head -c 4 "$TMP/cdf.png" | od -An -c | tr -d ' ')" = "211PNG" ] || fail "plot is not a PNG"

# errors: usage -> 2, runtime -> 1, with a message that says what
$S --set threads=0 2>"$TMP/e1"; [ $? = 2 ] || fail "threads=0 not a usage error"
grep -q 'threads' "$TMP/e1" || fail "no message for threads=0"
$S --bogus 2>/dev/null; [ $? = 2 ] || fail "unknown option not exit 2"
printf '[x]\ncores = many\n' >"$TMP/bad.scn"
$S --scenario "$TMP/bad.scn" 2>"$TMP/e2"; [ $? = 2 ] || fail "bad scenario not exit 2"
grep -q "bad.scn:2: cores" "$TMP/e2" || fail "bad scenario error lacks file:line: $(cat "$TMP/e2")"
$S --trace "$TMP/nonexistent.zst" 2>"$TMP/e3"; [ $? = 1 ] || fail "missing trace not exit 1"
grep -q "nonexistent.zst" "$TMP/e3" || fail "missing trace message"
$S --seq-mean-ms 0.001 2>"$TMP/e4"; [ $? = 2 ] || fail "impossible calibration not exit 2"
grep -q "is not more than the host facts" "$TMP/e4" || fail "calibration error message"
# bad input, each one line that names what
one_line() { # one_line WANT_EXIT WANT_TEXT ARGS...: exit, text, one stderr line
    local want=$1 text=$2 st
    shift 2
    "$MTRACE" "$@" >"$TMP/o" 2>"$TMP/e"
    st=$?
    [ $st = "$want" ] || fail "$*: exit $st, want $want ($(cat "$TMP/e"))"
    grep -q -- "$text" "$TMP/e" || fail "$*: no '$text' in: $(cat "$TMP/e")"
    [ "$(wc -l <"$TMP/e")" = 1 ] || fail "$*: not one line: $(cat "$TMP/e")"
}
: >"$TMP/empty.scn"
one_line 2 "empty.scn: no scenario" sim --scenario "$TMP/empty.scn"
[ ! -s "$TMP/o" ] || fail "an empty scenario file ran: $(head -3 "$TMP/o")"
printf '# just a comment\n\n   # another\n' >"$TMP/comments.scn"
one_line 2 "comments.scn: no scenario" sim --scenario "$TMP/comments.scn"
one_line 2 "empty.scn: no host facts" sim --host "$TMP/empty.scn" --set calls=2
one_line 2 "'x' is not a number" sim --seq-mean-ms 0.2,x
printf '[%s]\nthreads = 2\n' "$(printf 'n%.0s' $(seq 70))" >"$TMP/long.scn"
one_line 2 "long.scn:1: name: .* is longer than 63 bytes" sim --scenario "$TMP/long.scn"
one_line 2 "calibration 2 has neither" sim --seq-mean-ms 0.2 --seq-stdev-pct 3,4
printf 'cores = 2\nbogus_fact = 3 [measured] a newer calibrate\n' >"$TMP/newer.txt"
$S --host "$TMP/newer.txt" --set calls=2 --no-params >/dev/null 2>"$TMP/e6" || fail "unknown host fact: exit $?"
grep -q "bogus_fact' is not a parameter" "$TMP/e6" || fail "unknown host fact: no warning"
one_line 2 "--seed: expected an integer from 0" sim --seed -5
one_line 2 "--seed: expected an integer from 0" sim --seed x
one_line 2 "unknown option '--bogus'" sim --bogus
one_line 2 "option '--scenario' needs a value" sim --scenario
one_line 2 "option '--python' needs a value" calibrate --python
one_line 2 "unknown option '--bogus'" calibrate --bogus
one_line 1 "not a text file" sim --scenario "$TOP/traces/sample.zst"
one_line 1 "not a text file" sim --host "$TOP/traces/sample.zst"
one_line 1 "Is a directory" sim --scenario "$TMP"
# calibrate -o: a bad path fails at once, before ~40 s of measuring
start=$(date +%s)
one_line 1 "No such file or directory" calibrate -o "$TMP/nonexistent/host.txt"
[ $(($(date +%s) - start)) -lt 5 ] || fail "calibrate -o checked only after measuring"
one_line 1 "Is a directory" calibrate -o "$TMP"
# sim checks its output (a full disk while writing a table)
if [ -w /dev/full ]; then
    for np in --no-params ""; do
        $S --scenario "$TOP/sim/scenarios/seed000.scn" --only gil-direct-seq $np \
            >/dev/full 2>"$TMP/e5"
        [ $? = 1 ] || fail "sim $np > /dev/full: exit not 1"
        grep -q "error writing the output" "$TMP/e5" || fail "sim $np > /dev/full: no message"
    done
fi
echo "ok"
