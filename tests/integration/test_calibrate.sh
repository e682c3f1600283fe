#!/usr/bin/env bash
# test_calibrate.sh -- mtrace calibrate end to end: the host facts file has
# each fact the model reads
# (cores, sys_us, wake_us, ctx_cpu_us, switch_interval_us, gil_handoff_us,
# lock_block_cpu_us) once, as "key = number [measured] method", and nothing the
# model no longer has; mtrace sim takes the file as --host; the Python
# microbenchmarks run on their own; an extra argument, a Python that cannot
# run and a scripts folder without the scripts fail clearly and leave no
# file behind (the options and -o paths: test_sim_cli.sh).  Values are checked for sign and sanity
# only (the machine may be busy): no timing is asserted.
. "$(dirname "$0")/lib.sh"

"$MTRACE" calibrate -o "$TMP/host.txt" 2>"$TMP/err" || fail "calibrate exit $?: $(cat "$TMP/err")"
for k in cores sys_us wake_us ctx_cpu_us switch_interval_us gil_handoff_us lock_block_cpu_us; do
    [ "$(grep -c "^$k = " "$TMP/host.txt")" = 1 ] || fail "host facts: $k not there once"
    grep -Eq "^$k = [0-9]+(\.[0-9]+)? \[measured\] .{20,}" "$TMP/host.txt" ||
        fail "host facts: $k is not 'number [measured] method': $(grep "^$k" "$TMP/host.txt")"
done
"$PYTHON" - "$TMP/host.txt" <<'PY' || fail "host facts out of range"
import sys
f = {}
for line in open(sys.argv[1]):
    if line.startswith("#") or "=" not in line:
        continue
    k, v = line.split("=", 1)
    f[k.strip()] = float(v.split()[0])
bad = []
if f["cores"] < 1 or f["cores"] != int(f["cores"]):
    bad.append("cores %s" % f["cores"])
for k in ("sys_us", "wake_us", "gil_handoff_us"):
    if not 0 < f[k] < 1e6:
        bad.append("%s %s" % (k, f[k]))
for k in ("ctx_cpu_us", "lock_block_cpu_us"):
    if not 0 <= f[k] < 1e6:
        bad.append("%s %s" % (k, f[k]))
if f["switch_interval_us"] != 5000:  # CPython's default, nobody changed it here
    bad.append("switch_interval_us %s" % f["switch_interval_us"])
keep = {"cores", "sys_us", "wake_us", "ctx_cpu_us", "switch_interval_us", "gil_handoff_us",
        "lock_block_cpu_us"}
if set(f) != keep:
    bad.append("facts beside the model's: %s" % sorted(set(f) - keep))
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
# a sequential mean the facts leave room in (sim/fit.c: releases x sys_us +
# ctx_cpu_us + wake_us + the server's 60 us, then 300 us of Python): a slow
# host, or one built with TSan, measures larger facts, and mtrace sim rightly
# refuses a mean they already exceed
open(sys.argv[1] + ".seq", "w").write("%.4f\n" % (
    (3 * f["sys_us"] + f["ctx_cpu_us"] + f["wake_us"] + 60 + 300) / 1000))
PY
grep -q "^# load before measuring (/proc/loadavg): [0-9]" "$TMP/host.txt" || fail "no load line"
# the file is a host facts file mtrace sim reads without a note
"$MTRACE" sim --host "$TMP/host.txt" --seq-mean-ms "$(cat "$TMP/host.txt.seq")" --threads 2 --calls 5 --seeds 1 \
    >"$TMP/sim.out" 2>"$TMP/sim.err" || fail "mtrace sim --host: exit $?: $(cat "$TMP/sim.err")"
grep -q "lock_block_cpu_us" "$TMP/sim.out" "$TMP/sim.err" || fail "mtrace sim does not show lock_block_cpu_us"
! grep -qi "unknown\|ignored" "$TMP/sim.err" || fail "mtrace sim ignored host facts: $(cat "$TMP/sim.err")"

# the Python microbenchmarks on their own, short: every key they document
"$PYTHON" "$TOP/sim/calibrate/gil_pingpong.py" 50 >"$TMP/gil" || fail "gil_pingpong.py exit $?"
for k in py_version gil switch_interval_us gil_handoff_us gil_handoff_cv; do
    grep -q "^$k " "$TMP/gil" || fail "gil_pingpong.py: no $k"
done
"$PYTHON" "$TOP/sim/calibrate/lock_contend.py" 1 >"$TMP/lock" || fail "lock_contend.py exit $?"
for k in py_version convoy_seq_cpu_us convoy_switch_cpu_us convoy_block_cpu_us \
    convoy_vcsw_per_block convoy_pairs convoy_weak convoy_T20in_d1_blocks convoy_T10out_d0_cycle_us \
    lock_pp_wake_us; do
    grep -q "^$k " "$TMP/lock" || fail "lock_contend.py: no $k"
done

# (bad options and -o paths: test_sim_cli.sh)
"$MTRACE" calibrate extra >/dev/null 2>"$TMP/e"
[ $? = 2 ] && grep -q "unexpected argument 'extra'" "$TMP/e" || fail "calibrate extra: $(cat "$TMP/e")"
# a Python that cannot run: the error names it, and the -o file is not left
"$MTRACE" calibrate --python "$TMP/no-python" -o "$TMP/h2.txt" >/dev/null 2>"$TMP/e" &&
    fail "calibrate with a missing Python succeeded"
grep -q "cannot run $TMP/no-python" "$TMP/e" || fail "no clear error: $(cat "$TMP/e")"
[ ! -e "$TMP/h2.txt" ] || fail "calibrate left $TMP/h2.txt after failing"
"$MTRACE" calibrate --scripts "$TMP" >/dev/null 2>"$TMP/e"
[ $? = 1 ] && grep -q "cannot run .*gil_pingpong.py" "$TMP/e" || fail "--scripts without scripts: $(cat "$TMP/e")"
echo "calibrate: ok"
