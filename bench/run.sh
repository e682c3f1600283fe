#!/usr/bin/env bash
# run.sh -- run every benchmark (`make bench`; never part of `make test`).
#
# Adding a benchmark needs no edit here: drop either
#   bench/bench_<name>.c   built by the Makefile as $BUILD/bench/bench_<name>
#                          and run with no arguments, or
#   bench/bench_<name>.sh  run with bash (env BUILD, TOP, MTRACE set).
# Each prints its own table to stdout.  Output is also kept in
# $BUILD/bench/<name>.out.  Exit status: 1 if any benchmark failed.
#
# Env: BUILD (default build/release), BENCH_ONLY=<name> runs one benchmark,
#      BENCH_ARGS passed to every compiled benchmark (e.g. "--seconds 0.2").
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP"
BUILD=${BUILD:-build/release}
export BUILD TOP MTRACE="$TOP/mtrace"
mkdir -p "$BUILD/bench"

ran=0 failed=0
run_one() { # name, command...
    local name=$1; shift
    if [ -n "${BENCH_ONLY:-}" ] && [ "$name" != "$BENCH_ONLY" ]; then
        return
    fi
    echo "=== $name ($(date -u +%FT%TZ), $(nproc) cpus)"
    if "$@" 2>&1 | tee "$BUILD/bench/$name.out"; [ "${PIPESTATUS[0]}" -eq 0 ]; then
        ran=$((ran + 1))
    else
        echo "bench: $name FAILED"; failed=$((failed + 1))
    fi
    echo
}

for src in bench/bench_*.c; do
    [ -e "$src" ] || continue
    name=$(basename "$src" .c)
    bin=$BUILD/bench/$name
    if [ ! -x "$bin" ]; then
        echo "bench: $bin not built (run: make bench)"; failed=$((failed + 1)); continue
    fi
    # shellcheck disable=SC2086
    run_one "$name" "$bin" ${BENCH_ARGS:-}
done
for script in bench/bench_*.sh; do
    [ -e "$script" ] || continue
    run_one "$(basename "$script" .sh)" bash "$script"
done
echo "bench: $ran ran, $failed failed"
[ "$failed" -eq 0 ]
