#!/usr/bin/env bash
# test_play_tls.sh -- `mtrace play --tls` to `mtrace replay --tls-cert`
# (certificates made at test time, tls_lib.py):
#  1. --tls-ca CA: the certificate and the host name are verified, every
#     request answered; the same through a URI (tls=true&tlsCAFile=...);
#     --tls-insecure too;
#  2. failures, one line each and exit 1: --tls against a CA that did not
#     sign the certificate (the system's), plain play to the TLS port, --tls
#     to a plain server.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replay_lib.sh"
WL=$TOP/tests/integration/replay_workload.py

mkdir "$TMP/certs"
"$PYTHON" "$TOP/tests/integration/tls_lib.py" "$TMP/certs" >/dev/null || fail "cannot make certificates"
CA=$TMP/certs/ca.pem
PEM=$TMP/certs/server.pem

start_mock MOCK
start_capture CAP "$MOCK" "$TMP/A.zst"
"$PYTHON" "$WL" "mongodb://127.0.0.1:$CAP/" >/dev/null || fail "workload through capture failed"
stop_wait $CAPTURE_PID || fail "capture exited $?"
start_replay REP "$TMP/A.zst" --tls-cert "$PEM"

for how in ca uri insecure; do
    case $how in
    ca) args=(--target 127.0.0.1:"$REP" --tls-ca "$CA") ;;
    uri) args=(--target "mongodb://127.0.0.1:$REP/?tls=true&tlsCAFile=$CA") ;;
    insecure) args=(--target 127.0.0.1:"$REP" --tls-insecure) ;;
    esac
    "$MTRACE" play "$TMP/A.zst" "${args[@]}" --max-speed >"$TMP/o" 2>"$TMP/e" ||
        fail "$how: play exited $?: $(cat "$TMP/e")"
    grep -Eq ': [1-9][0-9]* requests sent, .* 0 unanswered, 0 not sent' "$TMP/o" || fail "$how: $(head -1 "$TMP/o")"
    echo "ok: TLS ($how): $(head -1 "$TMP/o" | cut -d: -f2-)"
done

one_line_fail() {
    [ "$1" -eq 1 ] || fail "exit $1 (want 1): $(cat "$TMP/e")"
    [ "$(wc -l <"$TMP/e")" -eq 1 ] || fail "want one line on stderr: $(cat "$TMP/e")"
    grep -qF -- "$2" "$TMP/e" || fail "stderr lacks '$2': $(cat "$TMP/e")"
    echo "ok: $(cat "$TMP/e")"
}
"$MTRACE" play "$TMP/A.zst" --target 127.0.0.1:"$REP" --tls >"$TMP/o" 2>"$TMP/e"
one_line_fail $? "TLS handshake with 127.0.0.1:$REP failed"
"$MTRACE" play "$TMP/A.zst" --target 127.0.0.1:"$REP" --timeout-ms 3000 >"$TMP/o" 2>"$TMP/e"
one_line_fail $? "127.0.0.1:$REP"
"$MTRACE" play "$TMP/A.zst" --target 127.0.0.1:"$MOCK" --tls-insecure --timeout-ms 3000 >"$TMP/o" 2>"$TMP/e"
one_line_fail $? "127.0.0.1:$MOCK"
stop_wait $REPLAY_PID
