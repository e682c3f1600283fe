#!/usr/bin/env bash
# test_fault_enospc.sh -- a real full filesystem (ENOSPC, not the EFBIG of
# test_capture_diskfull.sh): two 192 KiB tmpfs mounts, one for the proxy's
# trace and one for a live capture (--iface lo) of the same traffic, while
# pymongo pushes ~1.6 MB of incompressible requests through the proxy.
# Documented behaviour (docs/capture.md, docs/reliability.md):
#   proxy: one error line naming ENOSPC, forwarding goes on (every call
#          answered), dropped records counted, exit 1, trace readable up to
#          its last complete frame;
#   live:  stops with a clear "No space left on device" error (exit 1,
#          not a signal), trace readable up to its last complete frame.
# Needs root (mount; CAP_NET_RAW for the live half): otherwise prints SKIP
# with the reason and exits 77 (run.sh counts it as skipped, not passed);
# without CAP_NET_RAW only the live half is skipped (a SKIP line).  ~4 s.
. "$(dirname "$0")/lib.sh"

MNT1=$TMP/mnt1 MNT2=$TMP/mnt2
mkdir -p "$MNT1" "$MNT2"
unmount() {
    umount "$MNT1" 2>/dev/null
    umount "$MNT2" 2>/dev/null
    cleanup
}
trap unmount EXIT
if ! mount -t tmpfs -o size=192k,mode=0700 mtrace-enospc "$MNT1" 2>"$TMP/mount.err"; then
    echo "SKIP: cannot mount a tmpfs ($(tr '\n' ' ' <"$TMP/mount.err")): no real ENOSPC test here"
    exit 77
fi
mount -t tmpfs -o size=192k,mode=0700 mtrace-enospc "$MNT2" || fail "second tmpfs mount"

start_mock MOCK
port=$(free_port)
"$MTRACE" capture --listen 127.0.0.1:"$port" --target 127.0.0.1:"$MOCK" \
    -o "$MNT1/proxy.zst" --threads 1 2>"$TMP/cap.log" &
CAP=$!
track_pid $CAP
live=1
"$MTRACE" capture --iface lo --port "$MOCK" --duration 60 -o "$MNT2/live.zst" \
    2>"$TMP/live.log" &
LIVE=$!
track_pid $LIVE
for ((i = 0; i < 100; i++)); do
    [ -s "$MNT2/live.zst" ] && break
    kill -0 $LIVE 2>/dev/null || break
    sleep 0.05
done
if ! [ -s "$MNT2/live.zst" ]; then
    wait $LIVE
    if grep -qiE 'permission|not permitted' "$TMP/live.log"; then
        echo "SKIP live half: $(tail -1 "$TMP/live.log")"
        live=0
    else
        cat "$TMP/live.log"
        fail "live capture did not start"
    fi
fi
wait_listening "$TMP/cap.log" $CAP capture
"$PYTHON" "$TOP/tests/integration/fill_workload.py" "$port" ||
    fail "pymongo through the proxy failed"
df -k "$MNT1" "$MNT2" | sed 's/^/df: /'

# The proxy: still forwarding; stop it and read its verdict.
kill -INT $CAP
wait $CAP
st=$?
cat "$TMP/cap.log"
[ $st -eq 1 ] || fail "proxy exited $st, expected 1 (the trace could not be written)"
full_trace_verdict "$TMP/cap.log" "$MNT1/proxy.zst" 'No space left on device'

[ $live -eq 1 ] || exit 0
# The live capture stops on its own with the error (or at the latest when
# signalled here: then it must still report the failure).
for ((i = 0; i < 100; i++)); do kill -0 $LIVE 2>/dev/null || break; sleep 0.05; done
kill -INT $LIVE 2>/dev/null
wait $LIVE
st=$?
cat "$TMP/live.log"
[ $st -eq 1 ] || fail "live capture exited $st, expected 1"
grep -q 'No space left on device' "$TMP/live.log" || fail "live: the error does not say ENOSPC"
"$MTRACE" dump --json "$MNT2/live.zst" >"$TMP/ldump.json" 2>"$TMP/ldump.err"
n=$(grep -c '"type":"msg"' "$TMP/ldump.json")
echo "live trace: $(stat -c %s "$MNT2/live.zst") bytes, $n messages readable; dump: $(tail -1 "$TMP/ldump.err")"
[ "$n" -ge 40 ] || fail "live: only $n messages readable from the trace on the full disk"
