#!/usr/bin/env bash
# run_all.sh "UNIT_BINS" "REGRESS_BINS" -- the body of `make test`.
set -u
cd "$(dirname "$0")/.."
rc=0
tests/run_unit.sh $1 || rc=1
tests/run_regress.sh $2 || rc=1
tests/integration/run.sh || rc=1
exit $rc
