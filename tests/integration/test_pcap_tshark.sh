#!/usr/bin/env bash
# test_pcap_tshark.sh -- what `mtrace capture --pcap` extracts equals what
# tshark's mongo dissector finds (count per opcode, per original opcode of
# OP_COMPRESSED, per OP_MSG command name and per OP_QUERY namespace), on the
# public captures in ../shared/captures and on the clean synthetic ones.
# tshark runs here, in the test; pcap_tshark.py prints both sides.
. "$(dirname "$0")/lib.sh"
B=$TOP/${BUILD:-build/release}
CAPS=$TOP/../shared/captures
command -v tshark >/dev/null || fail "tshark is not installed (tools/deps.sh)"
[ -d "$CAPS" ] || fail "no public captures at $CAPS"

# check NAME PCAP PORT: mtrace vs tshark on PCAP, server port PORT.
check() {
    local name=$1 pcap=$2 port=$3
    "$MTRACE" capture --quiet --pcap "$pcap" --port "$port" -o "$TMP/$name.zst" ||
        fail "$name: mtrace capture exited $?"
    "$B/helpers/pcap_tracecount" "$TMP/$name.zst" >"$TMP/$name.lst" ||
        fail "$name: cannot read the trace"
    "$PYTHON" "$TOP/tests/integration/pcap_tshark.py" tshark "$pcap" "$port" \
        >"$TMP/$name.tshark" || fail "$name: tshark failed"
    "$PYTHON" "$TOP/tests/integration/pcap_tshark.py" listing "$TMP/$name.lst" \
        >"$TMP/$name.mtrace"
    [ -s "$TMP/$name.tshark" ] || fail "$name: tshark found no message"
    diff -u "$TMP/$name.tshark" "$TMP/$name.mtrace" ||
        fail "$name: mtrace and tshark disagree (- tshark, + mtrace)"
    echo "$name: $(awk '{n += $NF} END {print n}' "$TMP/$name.mtrace") messages, same as tshark"
}

check snappy "$CAPS/mongotools-compressed-snappy.pcap" 27017
check deeptrace "$CAPS/deeptrace-mongo-msg.pcap" 3717
# The synthetic captures tshark can follow (not the damaged ones: tshark
# does not resynchronise after a lost segment, and this build has no zstd).
"$B/helpers/mkpcap" "$TMP" basic reorder dup overlap wrap ipv6 vlan qinq sll \
    sll2 null raw nsec multi || fail "mkpcap"
for c in basic reorder dup overlap wrap ipv6 vlan qinq sll sll2 null raw nsec multi; do
    check "$c" "$TMP/$c.pcap" 27017
done
