# capture_env.sh -- sourced by bench/bench_capture.sh and
# bench/capture_cpu_split.sh (not run on its own; not named bench_* so that
# bench/run.sh does not run it): bench/common.sh (the temp dir and the
# cleanup trap, free_port, wait_port), the fixed-reply upstream, and
# starting and stopping the proxy under test (mtrace capture, a second
# mtrace binary, HAProxy in TCP mode, HAProxy terminating TLS, socat, or
# none), and run (one loadgen measurement, with the proxy's CPU per
# request).  The caller sets TOP, BUILD, MTRACE, MTRACE_B, THREADS, SECS,
# WARM and BENCH_NAME (for messages) before sourcing it, and TLS_PEM (a
# certificate chain followed by its key) for haproxy-tls.  PIN=1 pins each proxy's
# threads one per CPU, the same way for both: mtrace capture --pin-loops
# (loop i on CPU i) and HAProxy's cpu-map auto:1/1-THREADS 0-(THREADS-1)
# (thread i on CPU i-1); default 0: the scheduler places them.
PIN=${PIN:-0}
LOADGEN=$BUILD/helpers/loadgen
FIXEDSRV=$BUILD/helpers/fixedsrv
. "$TOP/bench/common.sh"

# start_fixedsrv [fixedsrv args...]: the upstream, one thread; sets UP
# (its port) and FS (pid); may run more than once (one file each)
FS_SEQ=0
start_fixedsrv() {
    local out=$TMP/fixedsrv.$((++FS_SEQ)).out
    "$FIXEDSRV" --threads 1 "$@" >"$out" &
    FS=$!
    PIDS+=("$FS")
    for ((i = 0; i < 100; i++)); do grep -qs READY "$out" && break; sleep 0.02; done
    UP=$(awk '/READY/ {print $2}' "$out")
    [ -n "$UP" ] || die "fixedsrv did not start"
}

PROXY_PID=""
PROXY_PORT=""
# each run's trace: a fresh name (a counter: $RANDOM repeats within a
# few hundred runs, and capture refuses to overwrite), removed by stop_proxy
PROXY_TRACE=""
PROXY_SEQ=0
# start_proxy KIND [mtrace args...]: KIND direct, mtrace, mtrace-b
# ($MTRACE_B), haproxy, haproxy-tls (bind ... ssl crt $TLS_PEM),
# haproxy-ttls (TLS to the server: server ... ssl verify required ca-file
# $CA) or socat in front of $UP; sets PROXY_PORT and PROXY_PID (empty for
# direct)
start_proxy() {
    local kind=$1; shift
    case $kind in
    direct) PROXY_PORT=$UP; PROXY_PID=""; return ;;
    mtrace | mtrace-b)
        local bin=$MTRACE
        [ "$kind" = mtrace-b ] && bin=${MTRACE_B:?MTRACE_B not set}
        # truncate here: the background child's 2> redirection runs later,
        # and the first grep must not see the previous run's line
        : >"$TMP/mtrace.err"
        local pin=()
        [ "$PIN" = 1 ] && pin=(--pin-loops)
        PROXY_SEQ=$((PROXY_SEQ + 1))
        PROXY_TRACE=$TMP/trace.$PROXY_SEQ.zst
        "$bin" capture --listen 127.0.0.1:0 --target 127.0.0.1:$UP \
            -o "$PROXY_TRACE" --threads "$THREADS" "${pin[@]}" "$@" 2>"$TMP/mtrace.err" &
        PROXY_PID=$!
        PIDS+=($PROXY_PID) # before anything can die: the trap stops it
        for ((i = 0; i < 500; i++)); do
            grep -q "listening on 127.0.0.1:[0-9]* ->" "$TMP/mtrace.err" && break
            sleep 0.02
        done
        PROXY_PORT=$(grep -o 'listening on 127.0.0.1:[0-9]*' "$TMP/mtrace.err" | cut -d: -f2)
        [ -n "$PROXY_PORT" ] || die "mtrace capture did not start: $(cat "$TMP/mtrace.err")"
        ;;
    haproxy | haproxy-tls | haproxy-ttls)
        PROXY_PORT=$(free_port)
        local ssl="" srv_ssl=""
        [ "$kind" = haproxy-tls ] && ssl=" ssl crt ${TLS_PEM:?TLS_PEM not set}"
        [ "$kind" = haproxy-ttls ] && srv_ssl=" ssl verify required ca-file ${CA:?CA not set}"
        cat >"$TMP/haproxy.cfg" <<HAPROXY
global
    nbthread $THREADS
$([ "$PIN" = 1 ] && echo "    cpu-map auto:1/1-$THREADS 0-$((THREADS - 1))")
    maxconn 4000
defaults
    mode tcp
    timeout connect 5s
    timeout client 60s
    timeout server 60s
frontend f
    bind 127.0.0.1:$PROXY_PORT$ssl
    default_backend b
backend b
    server s1 127.0.0.1:$UP$srv_ssl
HAPROXY
        haproxy -q -f "$TMP/haproxy.cfg" &
        PROXY_PID=$!
        PIDS+=($PROXY_PID)
        wait_port "$PROXY_PORT"
        ;;
    socat)
        PROXY_PORT=$(free_port)
        socat TCP-LISTEN:$PROXY_PORT,bind=127.0.0.1,fork,reuseaddr,nodelay,backlog=1024 \
            TCP:127.0.0.1:$UP,nodelay &
        PROXY_PID=$!
        PIDS+=($PROXY_PID)
        wait_port "$PROXY_PORT"
        ;;
    *) die "unknown proxy kind '$kind' (direct, mtrace, mtrace-b, haproxy, haproxy-tls, haproxy-ttls, socat)" ;;
    esac
}
stop_proxy() {
    [ -n "$PROXY_PID" ] || return 0
    kill -TERM "$PROXY_PID" 2>/dev/null
    wait "$PROXY_PID" 2>/dev/null
    PROXY_PID=""
    [ -z "$PROXY_TRACE" ] || rm -f "$PROXY_TRACE"
    PROXY_TRACE=""
}

# CPU ticks (utime + stime, all threads) of process $1
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
HZ=$(getconf CLK_TCK)

# run LABEL CONNS [loadgen args...] -> prints the loadgen line to stderr,
# sets P50 P99 RPS, CPU (the proxy's CPU us per request, "-" without a
# proxy) and, with TLS, HS (loadgen's handshake p50, us) and TLSDESC.
# The proxy's CPU time is sampled before loadgen starts and after it
# ends (connection set-up included), or with RUN_READY=1 from loadgen's
# "ready" (every connection set up and its TLS handshake done; polled
# every few ms, so up to ~10 ms of the warm-up may be missed: CPU per
# request is then under-stated by that fraction of SECS + WARM)
run() {
    local line c0=0 c1=0 label=$1 conns=$2 lg i
    shift 2
    if [ "${RUN_READY:-0}" = 1 ]; then
        "$LOADGEN" --target 127.0.0.1:$PROXY_PORT --conns "$conns" --duration "$SECS" \
            --warmup "$WARM" --label "$label" --ready "$@" >"$TMP/lg.out" 2>"$TMP/lg.err" &
        lg=$!
        PIDS+=("$lg")
        for ((i = 0; i < 6000; i++)); do
            grep -q '^loadgen: ready' "$TMP/lg.err" && break
            kill -0 "$lg" 2>/dev/null || break
            sleep 0.005
        done
        [ -n "$PROXY_PID" ] && c0=$(cpu_ticks "$PROXY_PID")
        wait "$lg" || die "loadgen $label failed: $(cat "$TMP/lg.out" "$TMP/lg.err")"
        line=$(cat "$TMP/lg.out")
    else
        [ -n "$PROXY_PID" ] && c0=$(cpu_ticks "$PROXY_PID")
        line=$("$LOADGEN" --target 127.0.0.1:$PROXY_PORT --conns "$conns" --duration "$SECS" \
            --warmup "$WARM" --label "$label" "$@") || die "loadgen $label failed: $line"
    fi
    [ -n "$PROXY_PID" ] && c1=$(cpu_ticks "$PROXY_PID")
    P50=$(sed -n 's/.* p50_us=\([0-9.]*\).*/\1/p' <<<"$line")
    P99=$(sed -n 's/.* p99_us=\([0-9.]*\).*/\1/p' <<<"$line")
    RPS=$(sed -n 's/.* rps=\([0-9.]*\).*/\1/p' <<<"$line")
    HS=$(sed -n 's/.* tls_hs_p50_us=\([0-9.]*\).*/\1/p' <<<"$line")
    TLSDESC=$(sed -n 's/.* tls=\([^ ]*\).*/\1/p' <<<"$line")
    CPU=-
    [ -n "$PROXY_PID" ] && CPU=$(awk "BEGIN { printf \"%.2f\", ($c1 - $c0) / $HZ * 1e6 / ($RPS * ($SECS + $WARM)) }")
    echo "  $line proxy_cpu_us_per_req=$CPU" >&2
}
