# Where the project's Redis keeps its state, and how to tell it is up. Sourced after lib.sh.

SBX_REDIS_DIR="$SBX_SERVICES_DIR/redis"
SBX_REDIS_PID_FILE="$SBX_REDIS_DIR/redis.pid"
SBX_REDIS_PORT_FILE="$SBX_REDIS_DIR/port"

# PING over a raw TCP connection (bash's /dev/tcp), so no redis-cli is needed. Runs in a subshell
# because a failed connect is a redirection error.
sbx_redis_ping() {
  local port="$1"
  (
    exec 3<>"/dev/tcp/127.0.0.1/$port" || exit 1
    printf 'PING\r\n' >&3
    IFS= read -r -t 2 reply <&3 || exit 1
    [[ "$reply" == $'+PONG\r' ]]
  ) 2>/dev/null
}

# The project's server is running: its pidfile names a live redis-server and its port answers PING.
sbx_redis_running() {
  local pid port
  pid="$(sbx_read_pid "$SBX_REDIS_PID_FILE" 2>/dev/null || true)"
  sbx_pid_is "$pid" redis-server || return 1
  [[ -r "$SBX_REDIS_PORT_FILE" ]] || return 1
  port="$(tr -dc '0-9' <"$SBX_REDIS_PORT_FILE")"
  [[ -n "$port" ]] && sbx_redis_ping "$port"
}
