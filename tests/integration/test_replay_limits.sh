#!/usr/bin/env bash
# test_replay_limits.sh -- per-connection limits of `mtrace replay` against
# bad clients over the network, while a pymongo client keeps working:
#   slow-loris (one byte a second)  -> closed by --msg-timeout-s
#   idle connection                 -> closed by --idle-timeout-s
#   length over --max-msg-bytes     -> closed at the header, nothing buffered
#   negative messageLength          -> closed as bad input
#   flood of pipelined pings from a client that never reads its replies
#                                   -> reading stops (bounded memory), then
#                                      closed as idle (no write progress)
# Each close has its log line; the summary counts timeouts and bad input;
# pymongo (heartbeat 0.5 s, so its monitor is never idle) sees no error.
# Runtime about 10 s.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replay_lib.sh"

start_mock MOCK
start_capture CAP "$MOCK" "$TMP/l.zst"
"$PYTHON" "$TOP/tests/integration/replay_latency.py" 2 "mongodb://127.0.0.1:$CAP/" >/dev/null ||
    fail "workload through capture failed"
stop_wait $CAPTURE_PID || fail "capture exited $?"

start_replay REP "$TMP/l.zst" --threads 1 --msg-timeout-s 1 \
    --idle-timeout-s 2 --max-msg-bytes 100000
"$PYTHON" - "$REP" "$REPLAY_PID" <<'PY' || fail "limits run failed"
import socket, struct, sys, threading, time
from pymongo import MongoClient
port, pid = int(sys.argv[1]), int(sys.argv[2])

def rss_kb():
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])

def ping(rid=7):
    body = b"\x10ping\0\1\0\0\0\x02$db\0\x06\0\0\0admin\0\0"
    body = struct.pack("<i", 4 + len(body)) + body
    return struct.pack("<iiiiIB", 16 + 5 + len(body), rid, 0, 2013, 0, 0) + body

def miss(rid):
    # a find the trace does not hold: a ~300-byte NoMatchingDocument reply
    body = (b"\x02find\0\x09\0\0\0test_col\0\x03filter\0\x13\0\0\0\x02_id\0"
            b"\x05\0\0\0nope\0\0\x02$db\0\x0d\0\0\0benchmark_db\0\0")
    body = struct.pack("<i", 4 + len(body)) + body
    return struct.pack("<iiiiIB", 16 + 5 + len(body), rid, 0, 2013, 0, 0) + body

def hdr(length, opcode=2013):
    return struct.pack("<iiii", length, 7, 0, opcode)

def wait_closed(s, limit):
    """Seconds until the server closed s (fails after limit)."""
    t0 = time.time()
    s.settimeout(limit)
    try:
        while True:
            if not s.recv(65536):
                break
    except ConnectionResetError:
        pass
    except socket.timeout:
        raise AssertionError("not closed within %.0f s" % limit)
    return time.time() - t0

# the well-behaved client, all along
stop = threading.Event()
errors, ok = [], [0]
def good():
    c = MongoClient("mongodb://127.0.0.1:%d/" % port, heartbeatFrequencyMS=500,
                    serverSelectionTimeoutMS=5000)
    col = c.benchmark_db.test_col
    while not stop.is_set():
        try:
            assert col.find_one({"_id": "test-doc-1"})["value"] == 42
            ok[0] += 1
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))
        time.sleep(0.01)
    c.close()
g = threading.Thread(target=good, daemon=True)
g.start()
time.sleep(0.5)

# slow-loris: one byte a second of a valid ping
loris = socket.create_connection(("127.0.0.1", port))
closed = []
def slow():
    for b in ping():
        try:
            loris.send(bytes([b]))
        except OSError:
            closed.append(time.time())
            return
        time.sleep(1)
lt = threading.Thread(target=slow, daemon=True)
t0 = time.time()
lt.start()

# idle connection
idle = socket.create_connection(("127.0.0.1", port))
# oversized and negative lengths
big = socket.create_connection(("127.0.0.1", port))
big.sendall(hdr(200000) + b"\0" * 100)
neg = socket.create_connection(("127.0.0.1", port))
neg.sendall(hdr(-5) + b"\0" * 8)
assert wait_closed(big, 5) < 5
assert wait_closed(neg, 5) < 5

# flood: 100 000 pipelined requests (~8 MB), replies (~30 MB) never read
flood = socket.socket()
flood.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
flood.connect(("127.0.0.1", port))
data = b"".join(miss(i + 1) for i in range(100000))
done = []
def flooder():
    try:
        flood.sendall(data)
        done.append("all")
    except OSError:
        done.append("closed")
ft = threading.Thread(target=flooder, daemon=True)
ft.start()
rss_flood = 0
t_flood = time.time()
while ft.is_alive() and time.time() - t_flood < 10:
    rss_flood = max(rss_flood, rss_kb())
    time.sleep(0.1)
print("flood: sender %s after %.1f s; replay peak RSS meanwhile %d kB" %
      ((done or ["blocked"])[0], time.time() - t_flood, rss_flood))
assert done == ["closed"], "the server read a never-reading client to the end"
assert rss_flood < 300 * 1024, "RSS %d kB" % rss_flood
s_idle = wait_closed(idle, 10) + 0  # opened ~1-2 s ago
print("idle closed after another %.1f s" % s_idle)
lt.join(10)
assert closed or not lt.is_alive(), "slow-loris never closed"
assert closed, "slow-loris sent its whole message: not closed"
print("slow-loris closed after %.1f s" % (closed[0] - t0))
assert closed[0] - t0 < 8
stop.set()
g.join()
print("pymongo: %d finds, %d errors" % (ok[0], len(errors)))
assert not errors, errors[:3]
assert ok[0] > 50
PY
stop_wait $REPLAY_PID || fail "replay exited $?"
log=$TMP/replay.$REP.log
cat "$log"
grep -q 'incomplete message: .* (--msg-timeout-s); closing it' "$log" ||
    fail "no slow-loris log line"
grep -q 'idle for .* (--idle-timeout-s); closing it' "$log" || fail "no idle line"
grep -q 'client does not read its replies' "$log" || fail "no flood line"
grep -q 'exceeds --max-msg-bytes 100000' "$log" || fail "no --max-msg-bytes line"
grep -q 'messageLength -5' "$log" || fail "no negative-length line"
grep -Eq 'bad input 2, timed out [3-9]' "$log" || fail "summary counts wrong"
