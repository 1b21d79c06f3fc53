#!/usr/bin/env bash
# Stops the project's dockerd (the one start-docker.sh started in $SBX_SERVICES_DIR) and unsets
# DOCKER_HOST when it pointed at it. Images stay in the data root, so the next start reuses them.
# Any other dockerd on the machine is never touched: the pid comes from this project's pidfile.
#
#   source tools/services/stop-docker.sh    or    bash tools/services/stop-docker.sh
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
# shellcheck source=docker-lib.sh
. "$here/docker-lib.sh"

[[ -d "$SBX_DOCKER_DIR" ]] || {
  sbx_log "dockerd: nothing to stop"
  exit 0
}
exec 9>"$SBX_DOCKER_DIR/lock"
flock -w 120 9 || sbx_die "timed out waiting for $SBX_DOCKER_DIR/lock"

pid="$(sbx_read_pid "$SBX_DOCKER_PID_FILE" || true)"
if sbx_pid_is "$pid" dockerd; then
  # dockerd stops its containers (10s grace each, in parallel) and its containerd before exiting.
  sbx_stop_pid "$pid" dockerd 45
  sbx_log "dockerd stopped (pid $pid)"
else
  sbx_log "dockerd: not running"
fi
# After a clean stop this finds nothing; after a SIGKILL it reaps the daemon's orphans.
sbx_docker_kill_leftovers
rm -f "$SBX_DOCKER_PID_FILE" "$SBX_DOCKER_SOCKET"

if [[ "${DOCKER_HOST:-}" == "$SBX_DOCKER_HOST" ]]; then
  echo "unset DOCKER_HOST"
fi
