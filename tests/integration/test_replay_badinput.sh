#!/usr/bin/env bash
# test_replay_badinput.sh -- `mtrace replay` given what it cannot serve
# from refuses to start: exit 1 with one line that names the file and what
# is wrong (a damaged trace: a warning line about the damage first),
# nothing listening, for
#  - a missing file, an empty file, a directory, a pcap, a text file, a
#    trace of format version 2, a trace whose header frame is damaged;
#  - a valid trace with no request/reply exchange (a proxy capture nobody
#    connected to) and the sample cut before its first exchange;
#  - a --listen port already in use;
#  - a --summary-json path that cannot be created (refused at start, not
#    after the run whose summary it would lose);
# and bad options are one-line usage errors (exit 2) naming the option.
# TRACE '-' reads standard input: empty is refused, the sample is served.
# Runtime: about 2 s.
. "$(dirname "$0")/lib.sh"

SAMPLE=$TOP/traces/sample.zst

# ---- inputs that are not a trace, or a damaged one ----
: >"$TMP/empty.zst"
mkdir "$TMP/dir.zst"
printf 'hello\n' >"$TMP/text.zst"
# version 2 and a damaged header frame, made from the sample with the zstd tool
"$PYTHON" - "$SAMPLE" "$TMP" <<'PY' || fail "could not derive the bad traces"
import struct, subprocess, sys
src, out = sys.argv[1], sys.argv[2]
data = open(src, "rb").read()
plain = bytearray(subprocess.run(["zstd", "-dc", src], capture_output=True, check=True).stdout)
assert plain[5:13] == b"MTRC\r\n\x1a\n"
hl = 5 + struct.unpack_from("<I", plain, 1)[0]
def z(b):
    return subprocess.run(["zstd", "-q", "-c", "--check"], input=bytes(b),
                          capture_output=True, check=True).stdout
plain[13:15] = struct.pack("<H", 2)
open(out + "/v2.zst", "wb").write(z(plain[:hl]) + z(plain[hl:]))
b = bytearray(data)
b[40] ^= 1                       # inside the header record's frame
open(out + "/hdrflip.zst", "wb").write(b)
open(out + "/cut.zst", "wb").write(data[:1047])  # inside the first data frame
# a pcap file (global header, one TCP/IPv4 packet to port 27017)
pkt = bytes(14) + bytes([0x45]) + bytes(8) + bytes([6]) + bytes(10) + bytes(2) + struct.pack(">H", 27017) + bytes(16)
hdr = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
open(out + "/app.pcap", "wb").write(hdr + struct.pack("<IIII", 1, 0, len(pkt), len(pkt)) + pkt)
PY

PORT=$(free_port)
refuse() { # FILE TEXT...
    local f=$1
    shift
    expect_refused "$PORT" "mtrace replay" "$f" "$@" -- \
        "$MTRACE" replay --listen 127.0.0.1:"$PORT" "$f"
    [ "$(grep -c . <<<"$REFUSED_OUT")" -le 2 ] || fail "$f: more than a line or two: $REFUSED_OUT"
}
refuse "$TMP/nonexistent.zst" "No such file"
refuse "$TMP/empty.zst" "empty file"
refuse "$TMP/dir.zst" "Is a directory"
refuse "$TMP/text.zst" "not an mtrace trace"
refuse "$TMP/app.pcap" "not an mtrace trace" "mtrace capture --pcap"
refuse "$TMP/v2.zst" "version 2"
refuse "$TMP/hdrflip.zst" "corrupt zstd frame"

# ---- a valid trace without any exchange ----
CPORT=$(free_port)
"$MTRACE" capture --listen 127.0.0.1:"$CPORT" --target 127.0.0.1:1 \
    -o "$TMP/none.zst" 2>"$TMP/cap.log" &
CPID=$!
track_pid $CPID
wait_listening "$TMP/cap.log" $CPID capture
kill -TERM $CPID
wait $CPID || fail "capture exited $?: $(cat "$TMP/cap.log")"
"$MTRACE" dump "$TMP/none.zst" >/dev/null || fail "the empty capture is not a valid trace"
refuse "$TMP/none.zst" "no request/reply exchange" "nothing to answer from"
# cut before the first exchange: the damage is warned about, then refused
refuse "$TMP/cut.zst" "truncated zstd frame" "no request/reply exchange"

# ---- port in use ----
"$PYTHON" -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen()
print("bound", flush=True); time.sleep(30)' "$PORT" >"$TMP/holder" &
HPID=$!
track_pid $HPID
for _ in $(seq 100); do grep -q bound "$TMP/holder" && break; sleep 0.05; done
out=$(timeout 10 "$MTRACE" replay --listen 127.0.0.1:"$PORT" "$SAMPLE" 2>&1)
rc=$?
[ $rc -eq 1 ] || fail "port in use: exit $rc (want 1): $out"
grep -qF "cannot listen on 127.0.0.1:$PORT: Address already in use" <<<"$out" ||
    fail "port in use: message: $out"
kill $HPID
wait $HPID 2>/dev/null

# ---- --summary-json that cannot be written: refused at start ----
PORT=$(free_port)
expect_refused "$PORT" "--summary-json $TMP/no/such/dir/s.json" "No such file" -- \
    "$MTRACE" replay --listen 127.0.0.1:"$PORT" --summary-json "$TMP/no/such/dir/s.json" "$SAMPLE"

# ---- TRACE '-': standard input (empty: refused; the sample: served) ----
PORT=$(free_port)
# shellcheck disable=SC2016 # $1 and $2 are sh -c's arguments
expect_refused "$PORT" "mtrace replay" "empty" -- \
    sh -c '"$1" replay --listen 127.0.0.1:"$2" - </dev/null' sh "$MTRACE" "$PORT"
"$MTRACE" replay --listen 127.0.0.1:"$PORT" --threads 1 - <"$SAMPLE" 2>"$TMP/stdin.log" &
RPID=$!
track_pid $RPID
wait_listening "$TMP/stdin.log" $RPID
"$PYTHON" - "$PORT" <<'PY' || fail "pymongo against a trace from stdin: $(cat "$TMP/stdin.log")"
import sys
import pymongo
c = pymongo.MongoClient(f"mongodb://127.0.0.1:{sys.argv[1]}/", serverSelectionTimeoutMS=5000)
doc = c.benchmark_db.test_col.find_one({"_id": "test-doc-1"})
assert doc == {"_id": "test-doc-1", "value": 42}, doc
PY
kill -TERM $RPID
wait $RPID || fail "replay from stdin exited $?: $(cat "$TMP/stdin.log")"

# ---- usage errors: exit 2, one line, naming the option ----
usage_err() { # TEXT ARGS...
    local text=$1 out rc
    shift
    out=$("$MTRACE" replay "$@" 2>&1)
    rc=$?
    [ $rc -eq 2 ] || fail "replay $*: exit $rc (want 2): $out"
    [ "$(grep -c . <<<"$out")" -eq 1 ] || fail "replay $*: not one line: $out"
    grep -qF -- "$text" <<<"$out" || fail "replay $*: message lacks '$text': $out"
}
usage_err "unknown option '--bogus'" --bogus "$SAMPLE"
usage_err "unknown option '-x'" -x "$SAMPLE"
usage_err "option '--seed' needs a value" "$SAMPLE" --seed
usage_err "no value allowed for option '--strict=1'" --strict=1 "$SAMPLE"
usage_err "bad --jitter-ms '-1'" --jitter-ms -1 "$SAMPLE"
usage_err "bad --delay-ms 'nan'" --delay-ms nan "$SAMPLE"
usage_err "expected one TRACE.zst" "$SAMPLE" "$SAMPLE"
echo "ok"
