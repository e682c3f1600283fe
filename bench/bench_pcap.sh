#!/usr/bin/env bash
# bench_pcap.sh -- `mtrace capture --pcap` import speed (MB/s of pcap on one
# core) on a large capture, side by side with `tshark -r FILE -Y mongo` on
# the same file, and trace size vs pcap size for the same traffic.
#
# Seed: real traffic, pymongo (bench/pcap_workload.py) against MockupDB,
# captured on lo with dumpcap.  Large file: bench/pcap_replicate copies the
# seed's flows with rewritten client addresses until PCAP_BENCH_BYTES
# (default 1.1 GB).  Both tools read the file from the page cache, pinned
# to one CPU (taskset); wall and CPU (user+sys) times are both reported
# (CPU time is the fair figure when other work shares the machine).  Everything is generated under a mktemp directory
# and deleted at the end.  Targets: >= 50x tshark, >= 500 MB/s,
# trace >= 10x smaller than the pcap.
# Then the trace writer's cost per zstd level on the same records
# (bench_trace --levels): what the import level (-3) was chosen from; and
# zstd alone per advanced parameter setting (bench_trace --zparams).  The
# floor: libpcap reading the file alone (pcap_replicate --read) plus the
# cheapest writer that keeps the trace >= 10x smaller, i.e. the import's
# cost with a packet path that cost nothing, and the tshark ratio it
# would allow.
# Last, where the instructions go (callgrind: the same on a busy or a quiet
# machine) in an import of a 30 MB copy, per component.
#   PCAP_BENCH_BYTES=N   size of the large capture
#   PCAP_BENCH_TSHARK=0  skip tshark (it is slow)
#   PCAP_BENCH_LEVELS="3 1 -1 -3 -5 -7"  zstd levels of the writer table
#                        ("" skips it)
#   PCAP_BENCH_ZPARAMS="SPEC..."  zstd advanced parameters of the writer
#                        (bench_trace --zparams; "default": its list of
#                        strategy/hashLog/minMatch/targetLength/windowLog/
#                        literal mode/frame size settings; "" skips it)
#   PCAP_BENCH_LAYOUT="-3 -7 -20"  zstd levels of the record-layout table
#                        (bench/trace_layout: columns of the changing
#                        fields apart from the repeating bytes; a
#                        measurement, the format is unchanged; "" skips it)
#   PCAP_BENCH_CALLGRIND=0  skip the instruction table (needs valgrind)
set -u
TOP=${TOP:-$(cd "$(dirname "$0")/.." && pwd)}
BUILD=${BUILD:-build/release}
MTRACE=${MTRACE:-$TOP/mtrace}
. "$TOP/tests/integration/lib.sh" # TMP (mktemp), start_mock, cleanup trap
SIZE=${PCAP_BENCH_BYTES:-1100000000}
CPU=$(( $(nproc) - 1 ))

start_mock PORT
dumpcap -q -i lo -f "tcp port $PORT" -w "$TMP/seed.pcap" 2>"$TMP/dumpcap.err" &
DC=$!
track_pid $DC
for ((i = 0; i < 100; i++)); do [ -s "$TMP/seed.pcap" ] && break; sleep 0.05; done
sleep 0.5
"$PYTHON" "$TOP/bench/pcap_workload.py" "$PORT" || fail "workload failed"
sleep 0.5
kill -INT $DC; wait $DC 2>/dev/null
"$MTRACE" capture --quiet --pcap "$TMP/seed.pcap" --port "$PORT" -o "$TMP/seed.zst" ||
    fail "seed import failed"
seed_msgs=$("$BUILD/helpers/pcap_tracecount" "$TMP/seed.zst" | grep -c '^msg ')
read -r _ copies _ pkts _ bytes < <("$BUILD/bench/pcap_replicate" \
    "$TMP/seed.pcap" "$TMP/big.pcap" "$SIZE" "$PORT")
fsize=$(stat -c %s "$TMP/big.pcap")
cat "$TMP/big.pcap" >/dev/null # page cache: both tools read from memory
LOAD=$(cut -d" " -f1-3 /proc/loadavg)

# run NAME CMD...: wall and CPU (user+sys) seconds of CMD into NAME_wall/_cpu
# (pinned to one CPU; PIN= unpinned)
PIN="taskset -c $CPU"
run() {
    local name=$1; shift
    # shellcheck disable=SC2086 # PIN: a command and its arguments, or none
    /usr/bin/time -f "%e %U %S" -o "$TMP/$name.time" $PIN "$@" ||
        fail "$name failed: $(tail -2 "$TMP/$name.err" 2>/dev/null)"
    read -r w u s <"$TMP/$name.time"
    printf -v "${name}_wall" '%s' "$w"
    printf -v "${name}_cpu" '%s' "$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')"
}
mbs() { awk -v b="$fsize" -v s="$1" 'BEGIN { if (s > 0) printf "%.0f", b / 1e6 / s; else printf "-" }'; }

run mtrace "$MTRACE" capture --quiet --pcap "$TMP/big.pcap" --port "$PORT" \
    -o "$TMP/big.zst"
tsize=$(stat -c %s "$TMP/big.zst")
# Once the CLI has --zstd-level: the whole import at the proxy's level 3 too.
if "$MTRACE" capture --help | grep -q -- --zstd-level; then
    run mtrace3 "$MTRACE" capture --quiet --pcap "$TMP/big.pcap" \
        --port "$PORT" --zstd-level 3 -o "$TMP/big3.zst"
    tsize3=$(stat -c %s "$TMP/big3.zst")
    rm -f "$TMP/big3.zst"
fi
# Unpinned, on a machine with 2+ CPUs, the import compresses on a second
# thread (sniff.c want_compress_thread): wall time for users; the
# one-core figures above have no such thread (pinned: one CPU allowed).
if [ "$(nproc)" -ge 2 ]; then
    PIN= run mtrace2 "$MTRACE" capture --quiet --pcap "$TMP/big.pcap" \
        --port "$PORT" -o "$TMP/big2.zst"
    cmp -s "$TMP/big.zst" "$TMP/big2.zst" && same2="same trace bytes" ||
        same2="trace $(stat -c %s "$TMP/big2.zst") bytes"
    rm -f "$TMP/big2.zst"
fi
# The floor of the reading: libpcap through the same FILE, packets unused.
run readonly "$BUILD/bench/pcap_replicate" --read "$TMP/big.pcap" >/dev/null
msgs=$("$BUILD/helpers/pcap_tracecount" "$TMP/big.zst" | grep -c '^msg ')
[ "$msgs" -eq $((seed_msgs * copies)) ] ||
    fail "big trace has $msgs messages, want $seed_msgs x $copies"
if [ "${PCAP_BENCH_TSHARK:-1}" != 0 ]; then
    run tshark sh -c "tshark -r '$TMP/big.pcap' -d 'tcp.port==$PORT,mongo' -Y mongo >/dev/null 2>'$TMP/tshark.err'"
else
    tshark_wall=0 tshark_cpu=0
fi
shrink=$(awk -v a="$fsize" -v b="$tsize" 'BEGIN { printf "%.1f", a / b }')

echo "seed: $(stat -c %s "$TMP/seed.pcap") bytes, $seed_msgs messages; large: $copies copies, $pkts packets, $fsize bytes, $msgs messages"
echo "load average before: $LOAD"
printf '%-26s %9s %9s %9s %9s\n' "pcap import, 1 core (zstd -3)" "wall s" "cpu s" "MB/s wall" "MB/s cpu"
printf '%-26s %9s %9s %9s %9s\n' "mtrace capture --pcap" "$mtrace_wall" "$mtrace_cpu" "$(mbs "$mtrace_wall")" "$(mbs "$mtrace_cpu")"
if [ -n "${mtrace3_cpu:-}" ]; then
    printf '%-26s %9s %9s %9s %9s   (trace %s bytes, %sx)\n' "  same, --zstd-level 3" "$mtrace3_wall" "$mtrace3_cpu" "$(mbs "$mtrace3_wall")" "$(mbs "$mtrace3_cpu")" \
        "$tsize3" "$(awk -v a="$fsize" -v b="$tsize3" 'BEGIN { printf "%.1f", a / b }')"
fi
if [ -n "${mtrace2_cpu:-}" ]; then
    printf '%-26s %9s %9s %9s %9s   (%s)\n' "  same, 2 CPUs (thread)" "$mtrace2_wall" "$mtrace2_cpu" "$(mbs "$mtrace2_wall")" "$(mbs "$mtrace2_cpu")" "$same2"
fi
if [ "${PCAP_BENCH_TSHARK:-1}" != 0 ]; then
    printf '%-26s %9s %9s %9s %9s\n' "tshark -r FILE -Y mongo" "$tshark_wall" "$tshark_cpu" "$(mbs "$tshark_wall")" "$(mbs "$tshark_cpu")"
    printf '%-26s %9s %9s   (target >= 50x)\n' "speed-up over tshark" \
        "$(awk -v a="$tshark_wall" -v b="$mtrace_wall" 'BEGIN { printf "%.0fx", a / b }')" \
        "$(awk -v a="$tshark_cpu" -v b="$mtrace_cpu" 'BEGIN { printf "%.0fx", a / b }')"
fi
printf '%-26s %9s   (%s -> %s bytes; target >= 10x)\n' "trace vs pcap size" "${shrink}x" "$fsize" "$tsize"
printf '%-26s %9s %9s %9s %9s   (libpcap reading alone)\n' "  floor: read the file" "$readonly_wall" "$readonly_cpu" "$(mbs "$readonly_wall")" "$(mbs "$readonly_cpu")"

levels=${PCAP_BENCH_LEVELS-3 1 -1 -3 -5 -7}
if [ -n "$levels" ]; then
    echo
    # shellcheck disable=SC2086 # a list of levels
    taskset -c $CPU "$BUILD/bench/bench_trace" --levels "$TMP/big.zst" \
        --ref-bytes "$fsize" $levels >"$TMP/levels.out" ||
        fail "bench_trace --levels failed"
    cat "$TMP/levels.out"
    echo "(MB/s (ref): MB of pcap per CPU second of the trace writer alone:"
    echo " record encoding + zstd + writing; the import adds libpcap and the"
    echo " packet path.  ref/size: pcap size / trace size at that level.)"
    # The cheapest writer that keeps the trace >= 10x smaller, plus the
    # reading floor: no packet path can make an import cheaper than that.
    wmin=$(awk '$1 ~ /^-?[0-9]+$/ && $5 >= 10 { if (m == "" || $2 < m) m = $2 } END { print m }' "$TMP/levels.out")
    if [ -n "$wmin" ] && [ "${PCAP_BENCH_TSHARK:-1}" != 0 ]; then
        awk -v r="$readonly_cpu" -v w="$wmin" -v t="$tshark_cpu" 'BEGIN {
            printf "floor of an import (CPU s): reading %.2f + cheapest writer >= 10x %.2f = %.2f: at most %.0fx tshark (50x = %.2f s)\n", r, w, r + w, t / (r + w), t / 50 }'
    fi
fi

zparams=${PCAP_BENCH_ZPARAMS-default}
if [ -n "$zparams" ]; then
    echo
    [ "$zparams" = default ] && zparams=
    # shellcheck disable=SC2086 # a list of settings
    taskset -c $CPU "$BUILD/bench/bench_trace" --zparams "$TMP/big.zst" \
        --ref-bytes "$fsize" $zparams || fail "bench_trace --zparams failed"
    echo "(zstd alone on the import's records, cut into frames as the writer"
    echo " cuts them: l level, s strategy (1 fast), w windowLog, h hashLog,"
    echo " m minMatch, t targetLength, lit literals (1 Huffman, 2 raw),"
    echo " F frame bytes; dec s: decompressing the frames again.)"
fi

layout=${PCAP_BENCH_LAYOUT--3 -7 -20}
if [ -n "$layout" ]; then
    echo
    # shellcheck disable=SC2086 # a list of levels
    LAYOUT_SEQS=1 taskset -c $CPU "$BUILD/bench/trace_layout" \
        "$TMP/big.zst" --ref-bytes "$fsize" $layout >"$TMP/layout.out" ||
        fail "trace_layout failed"
    grep -v 'sequences per record' "$TMP/layout.out"
    echo "(layout 0: the records as the writer lays them out today; 1: fixed"
    echo " fields as columns ahead of the wire bytes; 2: 1 + the wire header"
    echo " in columns, byte planes; 3: 2 + request and reply bodies apart."
    echo " relay s: this bench's naive re-layout copy, an upper bound.)"
    awk '/sequences per record/ { l = l sep $1 "/" $2 " " $6; sep = ", " }
         END { if (l != "") print "zstd sequences per record (layout/level count): " l }' \
        "$TMP/layout.out"
    if [ "${PCAP_BENCH_TSHARK:-1}" != 0 ]; then
        # The import with zstd's share replaced by the layout's: what a
        # writer with that layout could reach (its re-layout assumed free).
        awk -v m="$mtrace_cpu" -v t="$tshark_cpu" '
            $1 == 0 && $2 == -3 { base = $4 }
            $1 ~ /^[0-9]$/ && $2 ~ /^-?[0-9]+$/ && NF == 9 && $8 >= 10 { z[$1 " " $2] = $4; r[$1 " " $2] = $8 }
            END { for (k in z) { p = m - base + z[k]; split(k, a, " ")
                printf "projected import, layout %s level %s (%.1fx smaller): %.2f CPU s = %.0fx tshark\n", a[1], a[2], r[k], p, t / p } }' \
            "$TMP/layout.out" | sort
    fi
fi

# Instructions per component of an import (callgrind; functions are
# grouped by their library or source file).
if [ "${PCAP_BENCH_CALLGRIND:-1}" != 0 ] && command -v valgrind >/dev/null; then
    echo
    read -r _ c30 _ p30 _ b30 < <("$BUILD/bench/pcap_replicate" \
        "$TMP/seed.pcap" "$TMP/s30.pcap" 30000000 "$PORT")
    valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.out" "$MTRACE" \
        capture --quiet --pcap "$TMP/s30.pcap" --port "$PORT" \
        -o "$TMP/s30.zst" >/dev/null 2>&1 || fail "callgrind run failed"
    echo "instructions of an import (callgrind): $c30 copies, $p30 packets, $b30 bytes"
    callgrind_annotate --auto=no --threshold=100 "$TMP/cg.out" 2>/dev/null |
        awk '
        /^ *[0-9,]+ +\([ 0-9.]+%\) / {
            x = $1; gsub(",", "", x)
            if ($0 ~ /PROGRAM TOTALS/) next
            if ($0 ~ /libzstd/) k = "zstd (trace frames)"
            else if ($0 ~ /libz\.so/) k = "zlib crc32 (checksum frames)"
            else if ($0 ~ /libpcap|fileops|genops|iofread|fread_chk|libioP/) k = "libpcap + stdio reading"
            else if ($0 ~ /memmove|memcpy|mempcpy|memset/) k = "libc memcpy/memset"
            else if ($0 ~ /wire\.c|rd\.h:wire|wire_/) k = "wire framing + shallow parse"
            else if ($0 ~ /linkdec|rd\.h:decode/) k = "link/IP/TCP decoding"
            else if ($0 ~ /trace_rec|trace\.c|coarse|clock_gettime|buf\.c|rd\.h:encode/) k = "record encoding + writer"
            else if ($0 ~ /pcap_flow|tcp_reasm|pcap_msg|sniff/) k = "flows, reassembly, message cutting"
            else k = "other (start-up, libbson, ...)"
            a[k] += x
        }
        END { for (k in a) printf "%.0f\t%s\n", a[k], k }' | sort -rn |
        awk -F'\t' -v pk="$p30" '
        { v[NR] = $1; n[NR] = $2; t += $1 }
        END {
            printf "%-36s %9s %7s %8s\n", "component", "M instr", "share", "/packet"
            for (i = 1; i <= NR; i++)
                printf "%-36s %9.1f %6.1f%% %8.0f\n", n[i], v[i] / 1e6, 100 * v[i] / t, v[i] / pk
            printf "%-36s %9.1f %6.1f%% %8.0f\n", "total", t / 1e6, 100, t / pk
        }'
fi
