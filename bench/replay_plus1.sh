#!/bin/bash
# replay_plus1.sh -- how much pymongo's sequential latency rises at
# `mtrace replay --delay-ms 1` over `--delay-ms 0` (issue: 1 +- 0.02 ms),
# repeated: bench_replay.sh table 1's method (bench/seed000_bench.py against
# a trace recorded through `mtrace capture` from MockupDB), ROUNDS
# interleaved rounds of delay 0 and delay 1; prints each round's sequential
# means, the per-round differences and their median.
#   ROUNDS=7 bench/replay_plus1.sh
set -u
TOP=${TOP:-$(cd "$(dirname "$0")/.." && pwd)}
MTRACE=${MTRACE:-$TOP/mtrace}
. "$TOP/tests/integration/lib.sh" # TMP, PYTHON, start_mock, free_port, wait_listening, cleanup trap
start_mock MOCK
CAP=$(free_port)
"$MTRACE" capture --listen 127.0.0.1:$CAP --target 127.0.0.1:$MOCK -o "$TMP/seed.zst" 2>"$TMP/cap.log" &
CP=$!
track_pid $CP
wait_listening "$TMP/cap.log" $CP capture
"$PYTHON" "$TOP/bench/seed000_bench.py" "mongodb://127.0.0.1:$CAP/" capture >/dev/null ||
    fail "recording run failed"
kill $CP
wait $CP
for r in $(seq "${ROUNDS:-7}"); do
    for d in 0 1; do
        P=$(free_port)
        "$MTRACE" replay --listen 127.0.0.1:$P --delay-ms $d "$TMP/seed.zst" 2>"$TMP/replay.log" &
        RP=$!
        track_pid $RP
        wait_listening "$TMP/replay.log" $RP
        "$PYTHON" "$TOP/bench/seed000_bench.py" "mongodb://127.0.0.1:$P/" "d$d" |
            sed "s/^{/{\"round\": $r, /" >>"$TMP/rows"
        kill $RP
        wait $RP
    done
done
"$PYTHON" - "$TMP/rows" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"sequential"' in l]
by = {}
for r in rows:
    by.setdefault(r["round"], {})[r["label"]] = r["mean_ms"]
adds = [v["d1"] - v["d0"] for v in by.values()]
d0 = [v["d0"] for v in by.values()]
d1 = [v["d1"] for v in by.values()]
print("delay-0 sequential means:", ", ".join(f"{x:.3f}" for x in d0))
print("delay-1 sequential means:", ", ".join(f"{x:.3f}" for x in d1))
print("added per round:", ", ".join(f"{x:.3f}" for x in adds))
print(f"median of the means: d0 {statistics.median(d0):.3f} d1 {statistics.median(d1):.3f} -> added "
      f"{statistics.median(d1) - statistics.median(d0):.3f} ms; median of per-round added {statistics.median(adds):.3f} ms")
PY
