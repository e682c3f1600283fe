#!/usr/bin/env bash
# run.sh [NAME...] -- run the integration tests (tests/integration/test_*.sh
# and test_*.py).  Each test starts and stops its own servers on ports it
# picks and exits 0 on success, or 77 when it cannot run here (a "SKIP:
# reason" line in its output says why; counted as skipped, not passed).
# Lines starting with "SKIP" of a passing test are shown under its PASS line.
# Prints "integration: N passed, N failed, N skipped".
# MTRACE (default ./mtrace) and BUILD (default build/release, for the
# helper programs) choose the binaries under test.
# MT_SANITIZE=asan|ubsan|tsan (make asan / ubsan / tsan): every sanitizer report of
# any instrumented process goes to a file; a test after which a report
# appeared fails even when its own checks passed (a server stopped at the
# end of a test could not fail it otherwise); the reports are printed.
set -u
cd "$(dirname "$0")/../.."
export MTRACE="${MTRACE:-$PWD/mtrace}" BUILD="${BUILD:-build/release}" TOP="$PWD"
export PYTHON=/usr/bin/python3
sanlog=
if [ -n "${MT_SANITIZE:-}" ]; then
    sanlog=$(mktemp -d /tmp/mtrace-san.XXXXXX)
    supp=$PWD/tests/sanitizer
    # Options first, the caller's own after them (later ones win).
    export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:log_path=$sanlog/asan:${ASAN_OPTIONS:-}"
    export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0:${LSAN_OPTIONS:-}"
    export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$sanlog/ubsan:${UBSAN_OPTIONS:-}"
    export TSAN_OPTIONS="halt_on_error=0:second_deadlock_stack=1:suppressions=$supp/tsan.supp:log_path=$sanlog/tsan:${TSAN_OPTIONS:-}"
    echo "integration: MT_SANITIZE=$MT_SANITIZE MTRACE=$MTRACE BUILD=$BUILD"
fi
sanreports=0
taillines=40
[ -n "$sanlog" ] && taillines=200
tests=()
if [ $# -gt 0 ]; then
    for n in "$@"; do tests+=(tests/integration/$n); done
else
    for t in tests/integration/test_*.sh tests/integration/test_*.py; do
        [ -e "$t" ] && tests+=("$t")
    done
fi
pass=0 fail=0 skip=0 failed=()
for t in "${tests[@]}"; do
    start=$(date +%s)
    log=$(mktemp)
    case "$t" in
    *.py) timeout 300 "$PYTHON" "$t" >"$log" 2>&1 ;;
    *) timeout 300 bash "$t" >"$log" 2>&1 ;;
    esac
    st=$?
    secs=$(( $(date +%s) - start ))
    if [ -n "$sanlog" ] && [ -n "$(ls -A "$sanlog")" ]; then
        echo "SANITIZER $t: $(ls "$sanlog" | wc -l) report(s)" >>"$log"
        for f in "$sanlog"/*; do
            echo "== $f" >>"$log"
            head -n 60 "$f" >>"$log"
        done
        sanreports=$((sanreports + $(ls "$sanlog" | wc -l)))
        mkdir -p "$sanlog.kept" && mv "$sanlog"/* "$sanlog.kept"/
        { [ $st -eq 0 ] || [ $st -eq 77 ]; } && st=99
    fi
    if [ $st -eq 0 ]; then
        pass=$((pass + 1)); echo "PASS $t (${secs}s)"
        grep '^SKIP' "$log" | sed 's/^/    /'
    elif [ $st -eq 77 ]; then
        skip=$((skip + 1)); echo "SKIP $t (${secs}s)"
        grep '^SKIP' "$log" | sed 's/^/    /'
    else
        fail=$((fail + 1)); failed+=("$t"); echo "FAIL $t (exit $st, ${secs}s)"
        sed 's/^/    /' "$log" | tail -n "$taillines"
    fi
    rm -f "$log"
done
echo "integration: $pass passed, $fail failed, $skip skipped"
if [ -n "$sanlog" ]; then
    kept=
    [ $sanreports -gt 0 ] && kept=" (kept in $sanlog.kept)"
    echo "integration: $sanreports sanitizer report(s)$kept"
    rmdir "$sanlog" 2>/dev/null
fi
[ $fail -eq 0 ]
