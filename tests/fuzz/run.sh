#!/usr/bin/env bash
# run.sh BIN... -- run each libFuzzer target for FUZZ_SECONDS with its corpus
# (tests/data/corpus/<target>/ as seed, build/fuzz/corpus/<target>/ to grow).
set -u
cd "$(dirname "$0")/../.."
secs=${FUZZ_SECONDS:-600}
rc=0
for b in "$@"; do
    name=$(basename "$b"); name=${name#fuzz_}
    work=build/fuzz/corpus/$name
    mkdir -p "$work" build/fuzz/artifacts
    echo "fuzz: $name for ${secs}s"
    "$b" -max_total_time="$secs" -print_final_stats=1 \
        -artifact_prefix=build/fuzz/artifacts/"$name"- \
        "$work" tests/data/corpus/"$name" 2>&1 | tee build/fuzz/"$name".log |
        grep -E 'stat::number_of_executed_units|ERROR|SUMMARY' || true
    [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
done
exit $rc
