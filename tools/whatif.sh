#!/usr/bin/env bash
# whatif.sh -- the what-if workflow (docs/whatif.md): replay a trace with
# delay 0 and 1 ms, measure a client against `mtrace replay`, predict the
# scenarios not run with `mtrace sim` (calibrated from the sequential runs
# and the host facts only), print the measured-vs-predicted table and write
# a report folder (Markdown, JSON, gnuplot PNGs).
#
#     make whatif                         deps + build + this, on traces/sample.zst
#     tools/whatif.sh [--trace FILE] [--client "CMD"] [--out DIR] [--calls N]
#                     [--threads-calls N] [--threads 10,2,4,20] [--python PATH]
#                     [--host FILE] [--no-sniff] [--seed N]
#
# `tools/whatif.sh --help` lists the options.  Exit status: 0 report written,
# 1 a step failed (the message says which), 2 bad usage.  MTRACE=PATH runs
# that mtrace binary instead of ./mtrace (the sanitizer builds' test runs).
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
PY=/usr/bin/python3
need() { echo "whatif: $1; run 'make whatif' (installs what is missing and builds)" >&2; exit 1; }
[ -x "$PY" ] || need "$PY not found"
case " $* " in
*" -h "* | *" --help "*) exec "$PY" "$TOP/tools/whatif.py" --help ;;
esac
MT=${MTRACE:-$TOP/mtrace}
[ -x "$MT" ] || need "$MT is not built"
command -v gnuplot >/dev/null 2>&1 || need "gnuplot is not installed"
"$PY" -c 'import pymongo' 2>/dev/null || need "pymongo is missing for $PY (python3-pymongo)"
exec "$PY" "$TOP/tools/whatif.py" --mtrace "$MT" "$@"
