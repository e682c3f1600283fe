#!/usr/bin/env bash
# run_unit.sh BIN... -- run cmocka unit binaries, print a closing summary.
set -u
pass=0 fail=0 failed=()
for t in "$@"; do
    if "$t"; then pass=$((pass + 1)); else fail=$((fail + 1)); failed+=("$t"); fi
done
echo "unit: $pass passed, $fail failed"
[ $fail -eq 0 ] || { printf 'unit: FAILED %s\n' "${failed[@]}"; exit 1; }
