#!/bin/bash
# replay_repeats.sh -- the server-side delay precision of `mtrace replay`,
# repeated: REPS interleaved 3 s runs per point (one run moves a p99 by more
# than the issue's margins), for every delay in DELAYS, connection count in
# CONNS, scheduling (normal, --rt-prio 1) and PM QoS setting in PMS ("off"
# or a --cpu-dma-latency value).  Client: bench/replay_load (sleeping).
# Prints one line per run, then the table of medians (bench/replay_repeats.py).
#   BUILD=build/release DELAYS="0.1 1 5" CONNS="1 64" bench/replay_repeats.sh
set -u
TOP=${TOP:-$(cd "$(dirname "$0")/.." && pwd)}
BUILD=${BUILD:-build/release}
MTRACE=${MTRACE:-$TOP/mtrace}
. "$TOP/tests/integration/lib.sh" # TMP, free_port, wait_listening, cleanup trap
LOAD=$BUILD/bench/replay_load
[ -x "$LOAD" ] || fail "$LOAD missing (make $LOAD)"
for rep in $(seq "${REPS:-5}"); do
    for d in ${DELAYS:-0.1 1 5}; do
        for conns in ${CONNS:-1 64}; do
            for rt in 0 1; do
                for pm in ${PMS:-off 0}; do
                    port=$(free_port)
                    pmarg=()
                    [ "$pm" = off ] || pmarg=(--cpu-dma-latency "$pm")
                    "$MTRACE" replay --listen 127.0.0.1:"$port" --delay-ms "$d" --rt-prio $rt \
                        "${pmarg[@]}" --summary-json "$TMP/s.json" "$TOP/traces/sample.zst" 2>"$TMP/replay.log" &
                    pid=$!
                    wait_listening "$TMP/replay.log" $pid
                    "$LOAD" "$port" "$conns" 3 1 >"$TMP/load.txt" 2>&1
                    kill -INT $pid
                    wait $pid
                    "$PYTHON" -c 'import json, sys
s = json.load(open(sys.argv[1]))["achieved"]
print(sys.argv[2], "delay", sys.argv[3], "conns", sys.argv[4], "rt", sys.argv[5], "pmqos", sys.argv[6],
      ".achieved.p50_ms=%s .achieved.p99_ms=%s" % (s["p50_ms"], s["p99_ms"]))' \
                        "$TMP/s.json" "$rep" "$d" "$conns" "$rt" "$pm" | tee -a "$TMP/runs.txt"
                done
            done
        done
    done
done
"$PYTHON" "$TOP/bench/replay_repeats.py" "$TMP/runs.txt"
