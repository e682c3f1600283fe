# capture_env.sh -- sourced by bench/bench_capture.sh and
# bench/capture_cpu_split.sh (not run on its own; not named bench_* so that
# bench/run.sh does not run it): bench/common.sh (the temp dir and the
# cleanup trap, free_port, wait_port), the fixed-reply upstream, and
# starting and stopping the proxy under test (mtrace capture, a second
# mtrace binary, HAProxy in TCP mode, socat, or none).  The caller sets TOP, BUILD, MTRACE, MTRACE_B, THREADS and
# BENCH_NAME (for messages) before sourcing it.  PIN=1 pins each proxy's
# threads one per CPU, the same way for both: mtrace capture --pin-loops
# (loop i on CPU i) and HAProxy's cpu-map auto:1/1-THREADS 0-(THREADS-1)
# (thread i on CPU i-1); default 0: the scheduler places them.
PIN=${PIN:-0}
LOADGEN=$BUILD/helpers/loadgen
FIXEDSRV=$BUILD/helpers/fixedsrv
. "$TOP/bench/common.sh"

# start_fixedsrv: the upstream, one thread; sets UP (its port) and FS (pid)
start_fixedsrv() {
    "$FIXEDSRV" --threads 1 >"$TMP/fixedsrv.out" &
    FS=$!
    PIDS+=("$FS")
    for ((i = 0; i < 100; i++)); do grep -q READY "$TMP/fixedsrv.out" && break; sleep 0.02; done
    UP=$(awk '/READY/ {print $2}' "$TMP/fixedsrv.out")
    [ -n "$UP" ] || die "fixedsrv did not start"
}

PROXY_PID=""
PROXY_PORT=""
# each run's trace: a fresh name (a counter: $RANDOM repeats within a
# few hundred runs, and capture refuses to overwrite), removed by stop_proxy
PROXY_TRACE=""
PROXY_SEQ=0
# start_proxy KIND [mtrace args...]: KIND direct, mtrace, mtrace-b
# ($MTRACE_B), haproxy or socat in front of $UP; sets PROXY_PORT and
# PROXY_PID (empty for direct)
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
    haproxy)
        PROXY_PORT=$(free_port)
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
    bind 127.0.0.1:$PROXY_PORT
    default_backend b
backend b
    server s1 127.0.0.1:$UP
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
    *) die "unknown proxy kind '$kind' (direct, mtrace, mtrace-b, haproxy, socat)" ;;
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
