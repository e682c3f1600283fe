#!/usr/bin/env bash
# run.sh BIN... -- run each libFuzzer target for FUZZ_SECONDS with its corpus
# (tests/data/corpus/<target>/ as seed, build/fuzz/corpus/<target>/ to grow).
# FUZZ_RUNS=N stops a target after N executions instead (FUZZ_SECONDS then
# is only a backstop, default 3 h).  Each run ends with one summary line:
#   fuzz-result: <target> execs=N secs=S exec/s=R corpus=C commit=H[+dirty]
#                built=<binary mtime, UTC> rc=X
# (commit: HEAD when the run started; built: when the binary was linked.)
set -u
cd "$(dirname "$0")/../.."
runs=${FUZZ_RUNS:-}
if [ -n "$runs" ]; then secs=${FUZZ_SECONDS:-10800}; else secs=${FUZZ_SECONDS:-600}; fi
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain 2>/dev/null | grep -v '^??')" ]; then
    commit=$commit+dirty
fi
rc=0
for b in "$@"; do
    name=$(basename "$b"); name=${name#fuzz_}
    work=build/fuzz/corpus/$name
    mkdir -p "$work" build/fuzz/artifacts
    echo "fuzz: $name for ${secs}s${runs:+ or $runs runs}"
    t0=$(date +%s)
    "$b" -max_total_time="$secs" ${runs:+-runs="$runs"} -print_final_stats=1 \
        -artifact_prefix=build/fuzz/artifacts/"$name"- \
        "$work" tests/data/corpus/"$name" 2>&1 | tee build/fuzz/"$name".log |
        grep -E 'stat::number_of_executed_units|ERROR|SUMMARY' || true
    brc=${PIPESTATUS[0]}
    [ "$brc" -eq 0 ] || rc=1
    t=$(( $(date +%s) - t0 ))
    n=$(sed -n 's/^stat::number_of_executed_units: *//p' build/fuzz/"$name".log)
    n=${n:-0}
    echo "fuzz-result: $name execs=$n secs=$t exec/s=$(( n / (t > 0 ? t : 1) ))" \
        "corpus=$(ls "$work" | wc -l) commit=$commit" \
        "built=$(date -u -r "$b" +%Y-%m-%dT%H:%MZ) rc=$brc" |
        tee -a build/fuzz/results.log
done
exit $rc
