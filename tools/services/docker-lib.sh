# Where the project's dockerd keeps its state, and how to tell it is up. Sourced after lib.sh.

SBX_DOCKER_DIR="$SBX_SERVICES_DIR/docker"
SBX_DOCKER_PID_FILE="$SBX_DOCKER_DIR/dockerd.pid"
SBX_DOCKER_SOCKET="$SBX_SERVICES_DIR/docker.sock"
SBX_DOCKER_HOST="unix://$SBX_DOCKER_SOCKET"

# GET /_ping on the daemon's socket. curl when present, else the docker client.
sbx_docker_ping() {
  [[ -S "$SBX_DOCKER_SOCKET" ]] || return 1
  if command -v curl >/dev/null 2>&1; then
    [[ "$(curl -fsS --max-time 3 --unix-socket "$SBX_DOCKER_SOCKET" http://localhost/_ping 2>/dev/null)" == OK ]]
  else
    timeout 5 docker -H "$SBX_DOCKER_HOST" version >/dev/null 2>&1
  fi
}

# The project's daemon is running: its pidfile names a live dockerd and its socket answers /_ping.
sbx_docker_running() {
  local pid
  pid="$(sbx_read_pid "$SBX_DOCKER_PID_FILE" 2>/dev/null || true)"
  sbx_pid_is "$pid" dockerd && sbx_docker_ping
}

# What a daemon that died without a clean stop leaves behind: its containerd, the shims of its
# containers and the containers themselves (a new containerd then times out on the old state, and
# the containers would run on unowned). All are found by this daemon's exec root in their command
# line, which no other daemon's processes carry. Killing a shim's child, the container's first
# process, ends that container's whole pid namespace.
sbx_docker_kill_leftovers() {
  local exec_root="$SBX_DOCKER_DIR/exec/" pid args child
  for pid in $(pgrep -f -- "$exec_root" || true); do
    args="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" || continue
    case "$args" in
      *containerd-shim*)
        for child in $(pgrep -P "$pid" || true); do kill -KILL "$child" 2>/dev/null || true; done
        kill -KILL "$pid" 2>/dev/null || true
        sbx_log "killed leftover shim $pid"
        ;;
      containerd\ * | */containerd\ *)
        kill -KILL "$pid" 2>/dev/null || true
        sbx_log "killed leftover containerd $pid"
        ;;
    esac
  done
  # Mounts under the state dir (container root filesystems, network namespaces), deepest first.
  local mnt
  awk -v root="$SBX_DOCKER_DIR" '$5 == root || index($5, root "/") == 1 { print $5 }' /proc/self/mountinfo |
    sort -r | while read -r mnt; do umount -l "$mnt" 2>/dev/null || true; done
  rm -rf "$SBX_DOCKER_DIR/exec"
}
