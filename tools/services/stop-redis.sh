#!/usr/bin/env bash
# Stops the project's Redis (the one start-redis.sh started in $SBX_SERVICES_DIR) and unsets
# SBX_REDIS_URL when it pointed at it. Other Redis servers on the machine are never touched.
#
#   source tools/services/stop-redis.sh    or    bash tools/services/stop-redis.sh
if [[ "${BASH_SOURCE[0]}" != "$0" ]]; then
  __sbx_out="$(bash "${BASH_SOURCE[0]}" "$@")" && eval "$__sbx_out"
  __sbx_rc=$?
  unset __sbx_out
  return "$__sbx_rc"
fi
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
. "$here/lib.sh"
# shellcheck source=redis-lib.sh
. "$here/redis-lib.sh"

[[ -d "$SBX_REDIS_DIR" ]] || {
  sbx_log "redis: nothing to stop"
  exit 0
}
exec 9>"$SBX_REDIS_DIR/lock"
flock -w 60 9 || sbx_die "timed out waiting for $SBX_REDIS_DIR/lock"

port="$(tr -dc '0-9' 2>/dev/null <"$SBX_REDIS_PORT_FILE" || true)"
pid="$(sbx_read_pid "$SBX_REDIS_PID_FILE" || true)"
if sbx_pid_is "$pid" redis-server; then
  sbx_stop_pid "$pid" redis-server 15
  sbx_log "redis stopped (pid $pid)"
else
  sbx_log "redis: not running"
fi
rm -f "$SBX_REDIS_PID_FILE" "$SBX_REDIS_PORT_FILE"

if [[ -n "$port" && "${SBX_REDIS_URL:-}" == "redis://127.0.0.1:$port" ]]; then
  echo "unset SBX_REDIS_URL"
fi
