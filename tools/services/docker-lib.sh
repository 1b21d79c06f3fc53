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
