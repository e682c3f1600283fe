#!/usr/bin/env bash
# test_capture_cli.sh -- `mtrace capture` option contract: exit 2 with a
# one-line message on bad usage, --help documents every option, an existing
# output is not overwritten without --force (exit 1), the trace is 0600,
# SIGTERM ends the proxy cleanly (exit 0, summary, readable trace).
. "$(dirname "$0")/lib.sh"

usage() { # usage WANT_SUBSTRING ARGS...: expect exit 2 and the message
    local want=$1; shift
    "$MTRACE" capture "$@" >"$TMP/out" 2>"$TMP/err"
    local st=$?
    [ $st -eq 2 ] || fail "capture $*: exit $st, want 2 ($(cat "$TMP/err"))"
    [ "$(wc -l <"$TMP/err")" -eq 1 ] || fail "capture $*: want one line: $(cat "$TMP/err")"
    grep -q -- "$want" "$TMP/err" || fail "capture $*: message lacks '$want': $(cat "$TMP/err")"
}

usage "-o OUT.zst" --listen 127.0.0.1:1
usage "--delay-ms" -o "$TMP/x" --delay-ms abc
usage "--delay-ms" -o "$TMP/x" --delay-ms -1
usage "--delay-ms" -o "$TMP/x" --delay-ms 1e400
usage "--max-conns" -o "$TMP/x" --max-conns 0
usage "--max-conns" -o "$TMP/x" --max-conns 99999999999999999999999
usage "--threads" -o "$TMP/x" --threads 65
usage "--listen" -o "$TMP/x" --listen nocolon
usage "--listen" -o "$TMP/x" --listen 127.0.0.1:70000
usage "--target" -o "$TMP/x" --target 127.0.0.1:-5
usage "unknown option" -o "$TMP/x" --bogus
usage "needs a value" -o
usage "need --pcap or --iface" -o "$TMP/x" --port 27017
usage "exclude each other" -o "$TMP/x" --pcap a --iface b
usage "proxy mode" -o "$TMP/x" --pcap a --delay-ms 1
usage "--port" -o "$TMP/x" --pcap a --port 0
usage "unexpected argument" -o "$TMP/x" extra
usage "--idle-timeout-s" -o "$TMP/x" --idle-timeout-s -1
usage "--msg-timeout-s" -o "$TMP/x" --msg-timeout-s abc
usage "--max-msg-bytes" -o "$TMP/x" --max-msg-bytes 15
usage "--max-msg-bytes" -o "$TMP/x" --max-msg-bytes 48000001
usage "empty component" -o "$TMP/x" --redact a..b
usage "bad --filter" -o "$TMP/x" --pcap "$TOP/../shared/captures/deeptrace-mongo-msg.pcap" --filter "not a bpf ((("
[ ! -e "$TMP/x" ] || fail "a refused --filter left a trace behind"
usage "proxy mode" -o "$TMP/x" --pcap a --msg-timeout-s 5
usage "--rt-prio" -o "$TMP/x" --rt-prio abc
usage "--rt-prio" -o "$TMP/x" --rt-prio 100
usage "--rt-prio" -o "$TMP/x" --rt-prio -1
usage "proxy mode" -o "$TMP/x" --pcap a --rt-prio 1
usage "--zstd-level" -o "$TMP/x" --zstd-level 0
usage "--cpu-dma-latency" -o "$TMP/x" --cpu-dma-latency -5
usage "--cpu-dma-latency" -o "$TMP/x" --pcap a --cpu-dma-latency 0
[ ! -e "$TMP/x" ] || fail "a usage error created the output file"

"$MTRACE" capture --help >"$TMP/help" || fail "--help exit $?"
for opt in --listen --target -o --delay-ms --spin-us --max-conns --threads --quiet --force \
    --pcap --iface --port --filter --duration --count --idle-timeout-s --msg-timeout-s \
    --max-msg-bytes --redact --rt-prio --zstd-level --cpu-dma-latency; do
    grep -q -- "$opt" "$TMP/help" || fail "--help does not document $opt"
done
# the synopsis (up to the first empty line) lists, per mode, every option
# that mode accepts
sed '/^$/q' "$TMP/help" >"$TMP/syn"
awk '/--pcap FILE/ {exit} {print}' "$TMP/syn" >"$TMP/syn.proxy"
awk '/--pcap FILE/ {p=1} /--iface IF/ {p=0} p' "$TMP/syn" >"$TMP/syn.pcap"
awk '/--iface IF/ {p=1} p' "$TMP/syn" >"$TMP/syn.iface"
for opt in --listen --target --delay-ms --max-conns --threads --spin-us --rt-prio \
    --idle-timeout-s --msg-timeout-s --max-msg-bytes --queue-mb --zstd-level \
    --cpu-dma-latency --redact --quiet --force; do
    grep -q -- "$opt" "$TMP/syn.proxy" || fail "proxy synopsis lacks $opt"
done
for opt in --port --filter --zstd-level --redact --quiet --force; do
    grep -q -- "$opt" "$TMP/syn.pcap" || fail "--pcap synopsis lacks $opt"
done
for opt in --port --filter --duration --count --buffer-mb --zstd-level \
    --cpu-dma-latency --redact --quiet --force; do
    grep -q -- "$opt" "$TMP/syn.iface" || fail "--iface synopsis lacks $opt"
done
# a missing interface is a runtime condition like a missing --pcap file
"$MTRACE" capture --iface nosuch0 -o "$TMP/x" 2>"$TMP/err"
st=$?
[ $st -eq 1 ] || fail "--iface nosuch0: exit $st, want 1 ($(cat "$TMP/err"))"
grep -q "nosuch0" "$TMP/err" || fail "--iface nosuch0: message: $(cat "$TMP/err")"
"$MTRACE" capture --pcap "$TMP/nosuch.pcap" -o "$TMP/x" 2>"$TMP/err"
st=$?
[ $st -eq 1 ] || fail "--pcap missing file: exit $st, want 1"
[ ! -e "$TMP/x" ] || fail "a missing input created the output file"

start_mock MOCK
echo keep >"$TMP/exists"
"$MTRACE" capture --listen 127.0.0.1:0 --target 127.0.0.1:$MOCK -o "$TMP/exists" 2>"$TMP/err"
st=$?
[ $st -eq 1 ] || fail "existing output: exit $st, want 1"
grep -q -- "--force" "$TMP/err" || fail "existing output: message lacks --force: $(cat "$TMP/err")"
[ "$(cat "$TMP/exists")" = keep ] || fail "existing output was modified"

"$MTRACE" capture --listen 127.0.0.1:0 --target 127.0.0.1:$MOCK -o "$TMP/exists" --force \
    2>"$TMP/cap.err" &
CAP=$!
track_pid $CAP
for ((i = 0; i < 100; i++)); do
    grep -q "listening on" "$TMP/cap.err" && break
    sleep 0.05
done
PORT=$(grep -o 'listening on 127.0.0.1:[0-9]*' "$TMP/cap.err" | cut -d: -f2)
[ -n "$PORT" ] || fail "proxy did not start: $(cat "$TMP/cap.err")"
# a second proxy on the same port fails (no silent SO_REUSEPORT sharing)
"$MTRACE" capture --listen 127.0.0.1:$PORT --target 127.0.0.1:$MOCK -o "$TMP/second.zst" \
    2>"$TMP/second.err"
st=$?
[ $st -eq 1 ] || fail "second proxy on port $PORT: exit $st, want 1"
grep -q "Address already in use" "$TMP/second.err" || fail "second proxy: $(cat "$TMP/second.err")"
[ ! -e "$TMP/second.zst" ] || fail "a proxy that could not listen created its trace"

"$PYTHON" - "$PORT" <<'PY' || fail "pymongo through the proxy failed"
import sys, pymongo
c = pymongo.MongoClient("mongodb://127.0.0.1:%s/?directConnection=true" % sys.argv[1],
                        serverSelectionTimeoutMS=5000)
assert c.admin.command("ping")["ok"] == 1
c.close()
PY
kill -TERM $CAP
wait $CAP
st=$?
[ $st -eq 0 ] || fail "SIGTERM: exit $st: $(cat "$TMP/cap.err")"
grep -q "dropped 0" "$TMP/cap.err" || fail "no summary: $(cat "$TMP/cap.err")"
[ "$(stat -c %a "$TMP/exists")" = 600 ] || fail "--force output mode $(stat -c %a "$TMP/exists")"
"$MTRACE" dump "$TMP/exists" >"$TMP/dump" || fail "dump of the --force trace failed"
grep -q "ping" "$TMP/dump" || fail "ping not in the trace"

# --quiet: no summary (and --zstd-level in proxy mode: a readable trace)
"$MTRACE" capture --listen 127.0.0.1:0 --target 127.0.0.1:$MOCK -o "$TMP/q.zst" --quiet \
    --zstd-level 1 2>"$TMP/q.err" &
CAP=$!
track_pid $CAP
sleep 0.3
kill -INT $CAP
wait $CAP || fail "--quiet: exit $?"
! grep -q "recorded" "$TMP/q.err" || fail "--quiet printed a summary"
"$MTRACE" dump "$TMP/q.zst" >/dev/null || fail "dump of the --zstd-level 1 trace failed"

# --pin-loops: each loop thread may run on one CPU only, loop i on the i-th
# CPU the process may use (here: two loops on the first CPU it is given,
# taskset to one CPU, then two loops on two CPUs when there are two);
# threads other than the loops keep the whole set; proxy mode only
if command -v taskset >/dev/null; then
    ncpu=$(nproc)
    for threads in 2 3; do
        "$MTRACE" capture --listen 127.0.0.1:0 --target 127.0.0.1:$MOCK -o "$TMP/pin$threads.zst" \
            --quiet --pin-loops --threads $threads 2>"$TMP/pin.err" &
        CAP=$!
        track_pid $CAP
        want=$threads
        [ "$ncpu" -eq 1 ] && want=$((threads + 2)) # a 1-CPU host: every thread has one CPU
        # until every loop has pinned itself (counting tasks is not enough:
        # a sanitizer runtime adds a thread of its own)
        for ((i = 0; i < 100; i++)); do
            single=$(cat /proc/$CAP/task/*/status 2>/dev/null |
                awk '/Cpus_allowed_list/ && $2 ~ /^[0-9]+$/' | wc -l)
            [ "$single" -ge "$want" ] && break
            sleep 0.02
        done
        kill -INT $CAP
        wait $CAP || fail "--pin-loops: exit $?: $(cat "$TMP/pin.err")"
        [ "$single" -eq "$want" ] ||
            fail "--pin-loops --threads $threads: $single threads on one CPU, want $want"
    done
fi
out=$("$MTRACE" capture --pcap /dev/null --pin-loops -o "$TMP/pinpcap.zst" 2>&1)
[ $? -eq 2 ] && grep -q -- "--pin-loops" <<<"$out" || fail "--pin-loops with --pcap: $out"
echo "ok: capture CLI"
