#!/usr/bin/env bash
# test_play_pipeline.sh -- `mtrace play` of a connection that pipelined
# more requests than play queues (PLAY_QUEUE_REQS_MAX, 16384) before the
# first recorded reply.
#
# A raw-socket client (Python, OP_MSG built with pymongo's bson) sends
# 3000 finds on each of 8 connections without reading (replay keeps at
# most 4096 replies pending per connection), then reads the replies,
# through `mtrace capture` to `mtrace replay --delay-ms 3000`: in the
# trace all 24000 requests come before the first reply.  Played at
# --max-speed against `mtrace replay` without delay, play must send and
# have answered all of them (the requests whose recorded reply lies past
# its queue are reported without it, not waited for), exit 0, within
# 60 s; its summary counts the recorded replies it left unread.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replay_lib.sh"
C=8 PER=3000 N=24000

start_replay SLOW "$TOP/traces/sample.zst" --delay-ms 3000
start_capture CAP "$SLOW" "$TMP/A.zst"
"$PYTHON" - "$CAP" "$C" "$PER" <<'PY' || fail "pipelining client failed"
import socket, struct, sys
import bson

port, c, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
body = bson.encode({"find": "test_col", "filter": {"_id": "test-doc-1"},
                    "limit": 1, "singleBatch": True, "$db": "benchmark_db"})
out = bytearray()
for i in range(1, n + 1):
    out += struct.pack("<iiiiI", 16 + 5 + len(body), i, 0, 2013, 0)
    out += b"\x00" + body
socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(c)]
for s in socks:
    s.sendall(out)
for k, s in enumerate(socks):
    buf, got = b"", 0
    while got < n:
        chunk = s.recv(1 << 20)
        if not chunk:
            sys.exit("connection %d closed after %d replies" % (k, got))
        buf += chunk
        while len(buf) >= 4 and len(buf) >= struct.unpack_from("<i", buf)[0]:
            ln, _, to = struct.unpack_from("<iii", buf)
            if to != got + 1:
                sys.exit("reply %d answers %d" % (got + 1, to))
            buf = buf[ln:]
            got += 1
    s.close()
PY
stop_wait $CAPTURE_PID || fail "capture failed: $(tail -3 "$TMP/A.zst.log")"

# the scenario: all requests recorded before the first reply
"$MTRACE" dump --json "$TMP/A.zst" | "$PYTHON" -c '
import json, sys
dirs = [json.loads(l)["dir"] for l in sys.stdin if "\"dir\"" in l]
first = dirs.index("s2c")
assert first == int(sys.argv[1]) and dirs.count("c2s") == first, (first, len(dirs))
' "$N" || fail "the trace does not hold $N requests before its first reply"

start_replay FAST "$TOP/traces/sample.zst"
timeout 60 "$MTRACE" play "$TMP/A.zst" --target 127.0.0.1:"$FAST" --max-speed --json \
    >"$TMP/p.json" 2>"$TMP/p.err"
rc=$?
[ $rc -ne 124 ] || fail "play stalled (no end within 60 s)"
[ $rc -eq 0 ] || fail "play exit $rc: $(cat "$TMP/p.err")"
"$PYTHON" -c '
import json, sys
d = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
assert d["sent"] == n and d["answered"] == n and d["unanswered"] == 0, d
assert d["not_sent"] == 0, d
assert 0 < d["recorded_reply_unread"] < n, d
rec = d["report"]["commands"]["find"]["a"]
assert rec["requests"] == n, rec
assert rec["replies"] == n - d["recorded_reply_unread"], (rec, d["recorded_reply_unread"])
' "$TMP/p.json" "$N" || fail "summary: $(head -c 600 "$TMP/p.json")"
echo "ok: $N pipelined requests ($C x $PER) played past the queue limit"
