#!/usr/bin/env bash
# Starts (or reuses) the project's own dockerd for integration tests and exports DOCKER_HOST.
#
#   source tools/services/start-docker.sh          # exports DOCKER_HOST into this shell
#   bash tools/services/start-docker.sh            # prints `export DOCKER_HOST=...`
#   bash tools/services/start-docker.sh --check    # exit 0 iff the project's dockerd is running
#
# The daemon is the project's alone: its own socket, pidfile, data root and exec root under
# $SBX_SERVICES_DIR (default /tmp/sbx-services), and its own containerd namespace, so it neither
# disturbs nor is disturbed by a system dockerd. Networking is locked down: no default bridge, no
# iptables rules, no IP forwarding; containers use host networking and talk to 127.0.0.1 only.
# Needs root (dockerd does).
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
# shellcheck source=docker-lib.sh
. "$here/docker-lib.sh"

if [[ "${1:-}" == "--check" ]]; then
  sbx_docker_running
  exit
fi

# sun_path holds 108 bytes; a longer socket path fails later with a confusing bind error.
if ((${#SBX_DOCKER_SOCKET} > 100)); then
  sbx_die "socket path too long for a unix socket: $SBX_DOCKER_SOCKET (use a shorter SBX_SERVICES_DIR)"
fi

mkdir -p "$SBX_DOCKER_DIR"
# Serialises concurrent starts so only one daemon is spawned. The daemon must not inherit this
# descriptor (9>&- below), or it would hold the lock for its whole life.
exec 9>"$SBX_DOCKER_DIR/lock"
flock -w 120 9 || sbx_die "timed out waiting for $SBX_DOCKER_DIR/lock"

if sbx_docker_running; then
  sbx_log "dockerd already running (pid $(sbx_read_pid "$SBX_DOCKER_PID_FILE"), $SBX_DOCKER_HOST)"
  echo "export DOCKER_HOST=$SBX_DOCKER_HOST"
  exit 0
fi

stale_pid="$(sbx_read_pid "$SBX_DOCKER_PID_FILE" || true)"
if sbx_pid_is "$stale_pid" dockerd; then
  sbx_log "dockerd pid $stale_pid does not answer /_ping; stopping it"
  sbx_stop_pid "$stale_pid" dockerd 30
fi
rm -f "$SBX_DOCKER_PID_FILE" "$SBX_DOCKER_SOCKET"

sbx_is_root || sbx_die "dockerd needs root; run this as root (or point DOCKER_HOST at a daemon you run)"
if ! command -v dockerd >/dev/null 2>&1; then
  sbx_apt_install docker.io || sbx_die "dockerd is not installed"
fi

# An empty config file keeps /etc/docker/daemon.json (cgroup parents, mirrors, bridges of the
# host's own daemon) out of this one.
echo '{}' >"$SBX_DOCKER_DIR/daemon.json"

start_dockerd() {
  local driver="$1"
  local args=(
    --config-file "$SBX_DOCKER_DIR/daemon.json"
    --host "$SBX_DOCKER_HOST"
    --pidfile "$SBX_DOCKER_PID_FILE"
    --data-root "$SBX_DOCKER_DIR/data"
    --exec-root "$SBX_DOCKER_DIR/exec"
    --containerd-namespace sbx-test
    --containerd-plugins-namespace sbx-test-plugins
    --bridge=none
    --iptables=false
    --ip6tables=false
    --ip-forward=false
    --ip-masq=false
    --userland-proxy=false
    --log-level=warn
  )
  if [[ -n "$driver" ]]; then args+=(--storage-driver "$driver"); fi
  sbx_log "starting dockerd${driver:+ (storage driver $driver)}"
  # setsid: the daemon outlives this script and is not hit by the caller's Ctrl-C.
  setsid dockerd "${args[@]}" >>"$SBX_DOCKER_DIR/dockerd.log" 2>&1 </dev/null 9>&- &
  local launcher=$!
  # Ready when the socket answers; give up early if the daemon already exited.
  local deadline=$((SECONDS + 60))
  until sbx_docker_running; do
    if ! sbx_pid_alive "$launcher"; then
      sbx_log "dockerd exited during start-up"
      return 1
    fi
    if ((SECONDS >= deadline)); then
      sbx_log "dockerd did not answer within 60s; stopping it"
      sbx_stop_pid "$launcher" dockerd 20
      return 1
    fi
    sleep 0.1
  done
}

# One attempt from a clean slate: no daemon of ours runs at this point, so whatever its exec root
# still holds is stale.
attempt() {
  sbx_docker_kill_leftovers
  rm -f "$SBX_DOCKER_SOCKET" "$SBX_DOCKER_PID_FILE"
  : >"$SBX_DOCKER_DIR/dockerd.log"
  start_dockerd "$1"
}

driver="${SBX_DOCKER_STORAGE_DRIVER:-}"
if ! attempt "$driver"; then
  tail -n 15 "$SBX_DOCKER_DIR/dockerd.log" >&2 || true
  # overlay2 (the default) needs overlayfs where the data root lives; vfs works anywhere (slower,
  # larger), so it is the fallback when the storage driver is what failed. Anything else gets one
  # more try as it was.
  retry="$driver"
  if [[ -z "$driver" ]] && grep -qiE 'graphdriver|storage.driver|overlay' "$SBX_DOCKER_DIR/dockerd.log"; then
    retry=vfs
  fi
  if ! attempt "$retry"; then
    tail -n 15 "$SBX_DOCKER_DIR/dockerd.log" >&2 || true
    sbx_die "dockerd failed to start (log: $SBX_DOCKER_DIR/dockerd.log)"
  fi
fi
sbx_log "dockerd started (pid $(sbx_read_pid "$SBX_DOCKER_PID_FILE"), $SBX_DOCKER_HOST)"
echo "export DOCKER_HOST=$SBX_DOCKER_HOST"
