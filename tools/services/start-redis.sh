#!/usr/bin/env bash
# Starts (or reuses) the project's Redis for integration tests and exports SBX_REDIS_URL.
#
#   source tools/services/start-redis.sh          # exports SBX_REDIS_URL into this shell
#   bash tools/services/start-redis.sh            # prints `export SBX_REDIS_URL=...`
#   bash tools/services/start-redis.sh --check    # exit 0 iff the project's Redis is running
#
# One server per state dir ($SBX_SERVICES_DIR, default /tmp/sbx-services): a second start finds the
# running one by its pidfile, checks it answers PING, and reuses it.
if [[ "${BASH_SOURCE[0]}" != "$0" ]]; then
  # Sourced: do the work in a child so strict mode and helpers stay out of the caller's shell.
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

if [[ "${1:-}" == "--check" ]]; then
  sbx_redis_running
  exit
fi

mkdir -p "$SBX_REDIS_DIR"
# Serialises concurrent starts (two terminals, parallel test runs) so only one server is spawned.
# The server must not inherit this descriptor (9>&- below), or it would hold the lock forever.
exec 9>"$SBX_REDIS_DIR/lock"
flock -w 60 9 || sbx_die "timed out waiting for $SBX_REDIS_DIR/lock"

if sbx_redis_running; then
  port="$(cat "$SBX_REDIS_PORT_FILE")"
  sbx_log "redis already running (pid $(sbx_read_pid "$SBX_REDIS_PID_FILE"), port $port)"
  echo "export SBX_REDIS_URL=redis://127.0.0.1:$port"
  exit 0
fi

# Whatever is left is stale: a crashed server, or one that no longer answers.
stale_pid="$(sbx_read_pid "$SBX_REDIS_PID_FILE" || true)"
if sbx_pid_is "$stale_pid" redis-server; then
  sbx_log "redis pid $stale_pid does not answer PING; stopping it"
  sbx_stop_pid "$stale_pid" redis-server 10
fi
rm -f "$SBX_REDIS_PID_FILE" "$SBX_REDIS_PORT_FILE"

if ! command -v redis-server >/dev/null 2>&1; then
  sbx_apt_install redis-server || sbx_die "redis-server is not installed"
fi

port="$(sbx_free_port)"
mkdir -p "$SBX_REDIS_DIR/data"
# No persistence: the tests own every key, and a dump file would only leak state between runs.
redis-server \
  --bind 127.0.0.1 \
  --port "$port" \
  --daemonize yes \
  --save '' \
  --appendonly no \
  --pidfile "$SBX_REDIS_PID_FILE" \
  --logfile "$SBX_REDIS_DIR/redis.log" \
  --dir "$SBX_REDIS_DIR/data" >&2 9>&-
echo "$port" >"$SBX_REDIS_PORT_FILE"

if ! sbx_wait_for 20 sbx_redis_running; then
  tail -n 20 "$SBX_REDIS_DIR/redis.log" >&2 || true
  sbx_die "redis did not answer PING on 127.0.0.1:$port within 20s (log: $SBX_REDIS_DIR/redis.log)"
fi
sbx_log "redis started (pid $(sbx_read_pid "$SBX_REDIS_PID_FILE"), port $port)"
echo "export SBX_REDIS_URL=redis://127.0.0.1:$port"
