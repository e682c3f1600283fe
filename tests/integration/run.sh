#!/usr/bin/env bash
# run.sh [NAME...] -- run the integration tests (tests/integration/test_*.sh
# and test_*.py).  Each test starts and stops its own servers on ports it
# picks and exits 0 on success.  Prints "integration: N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
export MTRACE="$PWD/mtrace" BUILD="${BUILD:-build/release}" TOP="$PWD"
export PYTHON=/usr/bin/python3
tests=()
if [ $# -gt 0 ]; then
    for n in "$@"; do tests+=(tests/integration/$n); done
else
    for t in tests/integration/test_*.sh tests/integration/test_*.py; do
        [ -e "$t" ] && tests+=("$t")
    done
fi
pass=0 fail=0 failed=()
for t in "${tests[@]}"; do
    start=$(date +%s)
    log=$(mktemp)
    case "$t" in
    *.py) timeout 300 "$PYTHON" "$t" >"$log" 2>&1 ;;
    *) timeout 300 bash "$t" >"$log" 2>&1 ;;
    esac
    st=$?
    secs=$(( $(date +%s) - start ))
    if [ $st -eq 0 ]; then
        pass=$((pass + 1)); echo "PASS $t (${secs}s)"
    else
        fail=$((fail + 1)); failed+=("$t"); echo "FAIL $t (exit $st, ${secs}s)"
        sed 's/^/    /' "$log" | tail -n 40
    fi
    rm -f "$log"
done
echo "integration: $pass passed, $fail failed"
[ $fail -eq 0 ]
