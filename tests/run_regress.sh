#!/usr/bin/env bash
# run_regress.sh BIN... -- replay tests/data/corpus/<target>/ through each
# fuzz target's plain-main driver (tests/fuzz/regression_driver.c).
# The driver must refuse an empty corpus: checked first, with the first
# target, on an empty directory.
set -u
pass=0 fail=0
if [ $# -gt 0 ]; then
    empty=$(mktemp -d /tmp/mtrace-regress.XXXXXX)
    if "$1" "$empty" 2>/dev/null >/dev/null; then
        echo "regress: $1 passed on an empty corpus"; fail=$((fail + 1))
    fi
    rmdir "$empty"
fi
for b in "$@"; do
    name=$(basename "$b" _regress)
    name=${name#fuzz_}
    dir=tests/data/corpus/$name
    if [ ! -d "$dir" ]; then
        echo "regress: no corpus $dir for $b"; fail=$((fail + 1)); continue
    fi
    if "$b" "$dir"; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
done
echo "regress: $pass passed, $fail failed"
[ $fail -eq 0 ]
