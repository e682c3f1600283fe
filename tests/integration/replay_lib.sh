# replay_lib.sh -- helpers for the replay integration tests (source after
# lib.sh).
#   start_capture VAR TARGET_PORT OUT.zst   mtrace capture proxy; VAR = its port
#   stop_wait PID                           SIGTERM, wait, return its status
#   start_replay VAR TRACE [ARGS]           mtrace replay; VAR = port; log in
#                                           $TMP/replay.<port>.log, pid in
#                                           REPLAY_PID
#   wait_listening LOG PID                  until the log says "listening on"
#   same_lines A B                          fail with a diff unless equal

start_capture() {
    local var=$1 target=$2 out=$3 port
    port=$(free_port)
    "$MTRACE" capture --listen 127.0.0.1:"$port" --target 127.0.0.1:"$target" \
        -o "$out" 2>"$out.log" &
    CAPTURE_PID=$!
    track_pid $CAPTURE_PID
    wait_port "$port"
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

# wait_listening LOG PID: until replay's log says it listens (it says so
# after listen(), so the port is ready; a connect from wait_port would be a
# connection of its own, a failed handshake in a --tls-cert replay's log).
# 10 s; fails if the process exits first.
wait_listening() {
    local i
    for ((i = 0; i < 500; i++)); do
        grep -q "listening on" "$1" 2>/dev/null && return 0
        kill -0 "$2" 2>/dev/null || fail "replay exited before listening: $(cat "$1")"
        sleep 0.02
    done
    fail "replay did not say it listens after 10 s: $(cat "$1")"
}

same_lines() {
    if ! diff -u "$1" "$2" >"$TMP/diff.out"; then
        head -c 4000 "$TMP/diff.out" >&2
        fail "$1 and $2 differ"
    fi
}
