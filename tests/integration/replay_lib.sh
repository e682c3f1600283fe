# replay_lib.sh -- helpers for the replay integration tests (source after
# lib.sh).
#   start_capture VAR TARGET_PORT OUT.zst   mtrace capture proxy; VAR = its port
#   stop_wait PID                           SIGTERM, wait, return its status
#   start_replay VAR TRACE [ARGS]           mtrace replay; VAR = port; log in
#                                           $TMP/replay.<port>.log, pid in
#                                           REPLAY_PID
#   same_lines A B                          fail with a diff unless equal

start_capture() {
    local var=$1 target=$2 out=$3 port
    port=$(free_port)
    "$MTRACE" capture --listen 127.0.0.1:"$port" --target 127.0.0.1:"$target" \
        -o "$out" 2>"$out.log" &
    CAPTURE_PID=$!
    track_pid $CAPTURE_PID
    wait_listening "$out.log" $CAPTURE_PID capture
    printf -v "$var" '%s' "$port"
}

stop_wait() {
    local pid=$1
    kill -TERM "$pid" 2>/dev/null
    wait "$pid"
}

start_replay() {
    local var=$1 trace=$2 port
    shift 2
    port=$(free_port)
    "$MTRACE" replay --listen 127.0.0.1:"$port" "$@" "$trace" \
        2>"$TMP/replay.$port.log" &
    REPLAY_PID=$!
    track_pid $REPLAY_PID
    wait_listening "$TMP/replay.$port.log" $REPLAY_PID
    printf -v "$var" '%s' "$port"
}

same_lines() {
    if ! diff -u "$1" "$2" >"$TMP/diff.out"; then
        head -c 4000 "$TMP/diff.out" >&2
        fail "$1 and $2 differ"
    fi
}
