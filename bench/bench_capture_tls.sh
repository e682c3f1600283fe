#!/usr/bin/env bash
# bench_capture_tls.sh -- what a TLS leg costs: the recording proxy
# terminating TLS (`mtrace capture --tls-cert`, LEG=client, the default)
# or originating it (`mtrace capture --target-tls`, LEG=target) side by
# side with HAProxy (TCP mode, nbthread = THREADS) doing the same job
# (`bind ... ssl crt`, or `server ... ssl verify required ca-file`), on
# loopback, same client and same upstream:
#
#   client:   $BUILD/helpers/loadgen --tls-ca (closed loop, one find in
#             flight per connection; each connection's TLS handshake is
#             done before the load starts and is not in the RTT figures)
#   upstream: $BUILD/helpers/fixedsrv (LEG=client: plain TCP, both
#             proxies forward plaintext to it; LEG=target: a second one
#             with --tls-cert for the TLS rows, the same certificate,
#             each handshake on its loop before the first request)
#
# Rows (kinds), all in every repetition, interleaved, the order reversed
# in odd repetitions (the first of a pair tends to win on a VM):
#   direct       loadgen -> fixedsrv, plain (the floor; no TLS possible)
#   mtrace-tls   loadgen =TLS=> mtrace capture --tls-cert -> fixedsrv
#   haproxy-tls  loadgen =TLS=> haproxy ssl crt -> fixedsrv
#   mtrace, haproxy  the same proxies without TLS (PLAIN=1, the default):
#                what the TLS leg adds to each proxy, in the same run
# With LEG=target the TLS rows are instead
#   direct-tls   loadgen =TLS=> fixedsrv --tls-cert (what a client pays
#                talking TLS to the server itself, no proxy)
#   mtrace-tls   loadgen -> mtrace capture --target-tls --target-tls-ca
#                =TLS=> fixedsrv --tls-cert (chain and IP SAN verified)
#   haproxy-tls  loadgen -> haproxy server ... ssl verify required
#                ca-file =TLS=> fixedsrv --tls-cert (chain verified;
#                HAProxy checks no name without verifyhost/sni)
#
# 1. latency at 1 connection (from the 1-connection runs of 2): p50/p99
#    medians, added over the direct plain connection of the same
#    repetition, and mtrace-tls minus haproxy-tls per repetition (median,
#    95 % CI of the median).
# 2. throughput at T2_CONNS connections: requests/s medians, the
#    per-repetition ratio mtrace-tls / haproxy-tls (median, 95 % CI of the
#    median, min-max, won), each proxy's CPU us per request (utime + stime
#    from loadgen's "ready" -- every connection up, its handshake done --
#    to its end, warm-up included, / (rps x (SECS + WARM))) and
#    loadgen's handshake p50 (one handshake at a time, before the load).
# 3. (PLAIN=1) the TLS leg's cost per proxy: CPU us per request with TLS
#    minus without, and requests/s with TLS / without per repetition.
#
# Certificates: a CA and a server certificate (SAN IP:127.0.0.1,
# DNS:localhost, RSA 2048) made with the openssl CLI in the temp dir; the
# same PEM (chain + key) for both proxies (LEG=target: for fixedsrv).
# fixedsrv issues no session tickets and keeps no session cache (core/tls),
# so neither proxy resumes a session toward it; the handshakes happen
# before loadgen's "ready" either way.
#
# Env: SECS (seconds per measurement, default 3), WARM (default 0.5),
#      THREADS (mtrace/haproxy threads, default: nproc), REPS (repetitions,
#      default 1; the CI needs 6 or more), T2_CONNS (default "1 16 256"),
#      PLAIN (1: also the plain mtrace and HAProxy rows; default 1), BUILD,
#      MTRACE, PIN (as bench_capture.sh: see bench/capture_env.sh),
#      LEG (client, the default, or target: which leg of the proxy is TLS).
# Every process it starts is stopped on exit; files go to a mktemp dir.
set -u
TOP=${TOP:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$TOP"
BUILD=${BUILD:-build/release}
MTRACE=${MTRACE:-$TOP/mtrace}
MTRACE_B=""
SECS=${SECS:-3}
WARM=${WARM:-0.5}
THREADS=${THREADS:-$(nproc)}
REPS=${REPS:-1}
PLAIN=${PLAIN:-1}
T2_CONNS=${T2_CONNS:-1 16 256}
LEG=${LEG:-client}
BENCH_NAME=bench_capture_tls
. "$TOP/bench/capture_env.sh"

for b in "$LOADGEN" "$FIXEDSRV" "$MTRACE"; do
    [ -x "$b" ] || die "$b not built (make bench)"
done
command -v haproxy >/dev/null || die "haproxy not installed (tools/deps.sh)"
command -v openssl >/dev/null || die "openssl (the command-line tool) not installed"
"$LOADGEN" --tls-insecure 2>&1 | grep -q -- --tls-ca || die "$LOADGEN has no --tls-ca (rebuild: make helpers)"
case $LEG in client | target) ;; *) die "LEG=$LEG: client or target" ;; esac
[ "$LEG" = target ] && { "$FIXEDSRV" --tls-cert 2>&1 | grep -q -- --tls-cert ||
    die "$FIXEDSRV has no --tls-cert (rebuild: make helpers)"; }

# make_certs: $TMP/ca.pem, and $TMP/server.pem (certificate then key)
make_certs() {
    (
        cd "$TMP" || exit 1
        openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 \
            -subj "/CN=mtrace bench CA" &&
            openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr \
                -subj "/CN=localhost" &&
            printf '%s\n' "subjectAltName=IP:127.0.0.1,DNS:localhost" "basicConstraints=CA:FALSE" \
                "keyUsage=digitalSignature,keyEncipherment" "extendedKeyUsage=serverAuth" >server.ext &&
            openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
                -extfile server.ext -out server.crt &&
            cat server.crt server.key >server.pem
    ) >"$TMP/openssl.log" 2>&1 || die "openssl failed: $(tail -3 "$TMP/openssl.log")"
    CA=$TMP/ca.pem TLS_PEM=$TMP/server.pem
}
make_certs
UPT=""
if [ "$LEG" = target ]; then
    start_fixedsrv --tls-cert "$TLS_PEM"
    UPT=$UP
fi
start_fixedsrv # UP: the plain one

# start KIND: start_proxy for the rows above (UP=... applies to that call)
start() {
    case $LEG,$1 in
    client,mtrace-tls) start_proxy mtrace --tls-cert "$TLS_PEM" ;;
    target,mtrace-tls) UP=$UPT start_proxy mtrace --target-tls --target-tls-ca "$CA" ;;
    target,haproxy-tls) UP=$UPT start_proxy haproxy-ttls ;;
    target,direct-tls) UP=$UPT start_proxy direct ;;
    *) start_proxy "$1" ;;
    esac
}
# loadgen's TLS arguments for KIND: the rows where the client speaks TLS
lg_args() {
    case $LEG,$1 in client,*-tls | target,direct-tls) echo "--tls-ca $CA" ;; esac
}
f2() { awk "BEGIN { printf \"%.2f\", $* }"; }
# med FORMAT: the median of the numbers on stdin, printf'd
med() { awk -v fmt="$1" '{ printf fmt, $1 }' < <(median); }
# the proxy's CPU from loadgen's "ready": TLS handshakes not counted
RUN_READY=1

KINDS="direct mtrace-tls haproxy-tls"
[ "$PLAIN" = 1 ] && KINDS="direct mtrace mtrace-tls haproxy-tls haproxy"
[ "$LEG" = target ] && KINDS="$KINDS direct-tls"

if [ "$LEG" = client ]; then
    echo -n "mtrace capture --tls-cert vs HAProxy $(haproxy -v | awk 'NR==1 {print $3}') (TCP mode, bind ssl crt), "
else
    echo -n "mtrace capture --target-tls --target-tls-ca vs HAProxy $(haproxy -v | awk 'NR==1 {print $3}')" \
        "(TCP mode, server ssl verify required ca-file), "
fi
echo \
    "$(openssl version | awk '{print $1, $2}'), loopback, $(nproc) cpus, $SECS s per run (+ $WARM s warm-up)," \
    "$THREADS proxy threads, $REPS repetition(s), interleaved"
if [ "$LEG" = client ]; then
    echo "certificate: RSA 2048 signed by a throwaway CA; upstream fixedsrv plain; rows: $KINDS"
else
    echo "certificate: RSA 2048 signed by a throwaway CA, served by fixedsrv --tls-cert to the TLS rows" \
        "(direct is plain); rows: $KINDS"
fi
echo "date: $(date -u +%FT%TZ); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
[ "$PIN" = 1 ] && echo "PIN=1: mtrace capture --pin-loops, HAProxy cpu-map (one thread per CPU, both)"

declare -A RPSS CPUS HSS P50S P99S DESC
for n in $T2_CONNS; do
    for kind in $KINDS; do RPSS[$n,$kind]="" CPUS[$n,$kind]="" HSS[$n,$kind]="" P50S[$n,$kind]="" P99S[$n,$kind]=""; done
    for ((r = 0; r < REPS; r++)); do
        order=$KINDS
        ((r % 2)) && order=$(tr ' ' '\n' <<<"$KINDS" | tac | tr '\n' ' ')
        for kind in $order; do
            start "$kind"
            # shellcheck disable=SC2046
            run "$kind" "$n" $(lg_args "$kind")
            stop_proxy
            RPSS[$n,$kind]+=" $RPS" CPUS[$n,$kind]+=" $CPU" HSS[$n,$kind]+=" $HS"
            P50S[$n,$kind]+=" $P50" P99S[$n,$kind]+=" $P99"
            [ -n "$TLSDESC" ] && DESC[$kind]=$TLSDESC
        done
    done
done
if [ "$LEG" = client ]; then
    echo "negotiated: mtrace-tls ${DESC[mtrace-tls]:-?}, haproxy-tls ${DESC[haproxy-tls]:-?}"
else
    echo "negotiated (loadgen to fixedsrv, direct-tls): ${DESC[direct-tls]:-?}"
fi
echo

# pairs A B: per repetition, the numbers of list A op list B
pairs() { paste <(tr ' ' '\n' <<<"$1" | grep -v '^$') <(tr ' ' '\n' <<<"$2" | grep -v '^$'); }
per_rep_diff() { pairs "$1" "$2" | awk '{ printf " %.1f", $1 - $2 }'; }
per_rep_ratio() { pairs "$1" "$2" | awk '{ printf " %.3f", $1 / $2 }'; }

if [[ " $T2_CONNS " == *" 1 "* ]]; then
    echo "## 1. latency, 1 connection (us; medians of $REPS; added = per repetition, row - direct plain)"
    printf "| %-12s | %8s | %8s | %10s | %10s |\n" row p50 p99 "added p50" "added p99"
    printf "|--------------|----------|----------|------------|------------|\n"
    for kind in $KINDS; do
        printf "| %-12s | %8s | %8s | %10s | %10s |\n" "$kind" "$(med %.1f <<<"${P50S[1,$kind]}")" \
            "$(med %.1f <<<"${P99S[1,$kind]}")" \
            "$(med %.1f <<<"$(per_rep_diff "${P50S[1,$kind]}" "${P50S[1,direct]}")")" \
            "$(med %.1f <<<"$(per_rep_diff "${P99S[1,$kind]}" "${P99S[1,direct]}")")"
    done
    echo
    echo "mtrace-tls - haproxy-tls, per repetition (us; median, 95% CI of the median; n/a below 6 repetitions):"
    for q in p50 p99; do
        if [ $q = p50 ]; then d=$(per_rep_diff "${P50S[1,mtrace-tls]}" "${P50S[1,haproxy-tls]}")
        else d=$(per_rep_diff "${P99S[1,mtrace-tls]}" "${P99S[1,haproxy-tls]}"); fi
        echo "  $q: $(med %.1f <<<"$d") ($(median_ci "%.1f to %.1f" <<<"$d"));$d"
    done
    echo
fi

echo "## 2. throughput (requests/s, closed loop, medians of $REPS; ratio: mtrace-tls / haproxy-tls per repetition;"
echo "##    CPU: proxy's CPU us per request; hs: loadgen's TLS handshake p50, us, one at a time before the load$([ "$LEG" = target ] && echo "; none with LEG=target: loadgen speaks plain TCP to both proxies"))"
printf "| %5s | %9s | %10s | %11s | %8s | %15s | %13s | %7s | %8s | %8s | %7s | %7s |\n" conns direct mtrace-tls \
    haproxy-tls ratio "95% CI" min-max won "CPU mt" "CPU hap" "hs mt" "hs hap"
printf "|-------|-----------|------------|-------------|----------|-----------------|---------------|---------|----------|----------|---------|---------|\n"
declare -A RATIOS
for n in $T2_CONNS; do
    RATIOS[$n]=$(per_rep_ratio "${RPSS[$n,mtrace-tls]}" "${RPSS[$n,haproxy-tls]}")
    read -r won lo hi < <(tr ' ' '\n' <<<"${RATIOS[$n]}" | grep -v '^$' |
        awk 'NR == 1 { lo = $1; hi = $1 } { w += ($1 > 1); if ($1 < lo) lo = $1; if ($1 > hi) hi = $1 }
             END { print w + 0, lo, hi }')
    printf "| %5s | %9s | %10s | %11s | %7sx | %15s | %5s-%5sx | %2s of %-2s | %8s | %8s | %7s | %7s |\n" "$n" \
        "$(med %.0f <<<"${RPSS[$n,direct]}")" "$(med %.0f <<<"${RPSS[$n,mtrace-tls]}")" \
        "$(med %.0f <<<"${RPSS[$n,haproxy-tls]}")" "$(med %.3f <<<"${RATIOS[$n]}")" \
        "$(median_ci <<<"${RATIOS[$n]}")" "$lo" "$hi" "$won" "$REPS" \
        "$(med %.2f <<<"${CPUS[$n,mtrace-tls]}")" "$(med %.2f <<<"${CPUS[$n,haproxy-tls]}")" \
        "$(med %.0f <<<"${HSS[$n,mtrace-tls]}")" "$(med %.0f <<<"${HSS[$n,haproxy-tls]}")"
done
echo
echo "per-repetition ratios mtrace-tls / haproxy-tls:"
for n in $T2_CONNS; do echo "  $n:${RATIOS[$n]}"; done
echo

if [ "$PLAIN" = 1 ]; then
    echo "## 3. what the TLS leg adds to each proxy (same repetitions; CPU us per request, medians;"
    echo "##    TLS/plain: requests/s with TLS over without, per repetition, median and 95% CI)"
    printf "| %5s | %-7s | %9s | %9s | %9s | %8s | %15s | %10s | %10s |\n" conns proxy "CPU plain" "CPU TLS" \
        "CPU added" TLS/plain "95% CI" "rps plain" "rps TLS"
    printf "|-------|---------|-----------|-----------|-----------|----------|-----------------|------------|------------|\n"
    for n in $T2_CONNS; do
        for p in mtrace haproxy; do
            cp=$(med %.2f <<<"${CPUS[$n,$p]}") ct=$(med %.2f <<<"${CPUS[$n,$p-tls]}")
            rr=$(per_rep_ratio "${RPSS[$n,$p-tls]}" "${RPSS[$n,$p]}")
            printf "| %5s | %-7s | %9s | %9s | %9s | %7sx | %15s | %10s | %10s |\n" "$n" "$p" "$cp" "$ct" \
                "$(f2 "$ct - $cp")" "$(med %.3f <<<"$rr")" "$(median_ci <<<"$rr")" \
                "$(med %.0f <<<"${RPSS[$n,$p]}")" "$(med %.0f <<<"${RPSS[$n,$p-tls]}")"
        done
    done
    echo
    echo "plain mtrace / plain haproxy, per repetition (the bench_capture.sh comparison, same run):"
    for n in $T2_CONNS; do
        rr=$(per_rep_ratio "${RPSS[$n,mtrace]}" "${RPSS[$n,haproxy]}")
        echo "  $n: median $(med %.3f <<<"$rr") ($(median_ci <<<"$rr"));$rr"
    done
fi
