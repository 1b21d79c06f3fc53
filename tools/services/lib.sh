# Shared helpers for the service scripts in this folder. Sourced by them, never run on its own.
# Every helper logs to stderr: stdout of the start/stop scripts carries only the `export`/`unset`
# lines that a caller evals.

SBX_SERVICES_DIR="${SBX_SERVICES_DIR:-/tmp/sbx-services}"

sbx_log() {
  printf '[sbx-services] %s\n' "$*" >&2
}

sbx_die() {
  sbx_log "error: $*"
  exit 1
}

sbx_is_root() {
  [[ "$(id -u)" == 0 ]]
}

# Installs Debian packages when we are root and apt-get exists. Daemons in the packages are kept
# from being started by their install scripts (a policy-rc.d that denies every start), because the
# distribution's default dockerd would create a bridge on a private range and a redis on 6379:
# the project runs its own instances with its own settings instead.
sbx_apt_install() {
  if ! sbx_is_root; then
    sbx_log "not root: cannot install $*; install it yourself (apt-get install $*)"
    return 1
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    sbx_log "apt-get not found: cannot install $*"
    return 1
  fi
  local policy=/usr/sbin/policy-rc.d created_policy=0 rc=0
  if [[ ! -e "$policy" ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    created_policy=1
  fi
  sbx_log "installing $* with apt-get"
  # A stale package index is the usual reason an install fails on a fresh machine: refresh once.
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >&2; then
    DEBIAN_FRONTEND=noninteractive apt-get update -q >&2 &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >&2 || rc=$?
  fi
  if [[ "$created_policy" == 1 ]]; then rm -f "$policy"; fi
  return "$rc"
}

# A TCP port on 127.0.0.1 that nothing listens on right now (the kernel picks it).
sbx_free_port() {
  node -e '
    const s = require("node:net").createServer();
    s.listen(0, "127.0.0.1", () => { process.stdout.write(String(s.address().port)); s.close(); });
  '
}

# True when PID exists and has not exited (a zombie has exited already; it only waits for a parent
# that may never reap it).
sbx_pid_alive() {
  local pid="$1" state
  [[ -n "$pid" && "$pid" =~ ^[0-9]+$ ]] || return 1
  state="$(sed -E 's/^[0-9]+ \(.*\) ([A-Za-z]).*/\1/' "/proc/$pid/stat" 2>/dev/null)" || return 1
  [[ -n "$state" && "$state" != Z ]]
}

# True when PID is alive and its executable name is NAME. Checking the name guards against a pid
# from a stale pidfile having been reused by an unrelated process.
sbx_pid_is() {
  local pid="$1" name="$2" comm
  sbx_pid_alive "$pid" || return 1
  comm="$(cat "/proc/$pid/comm" 2>/dev/null)" || return 1
  [[ "$comm" == "$name" ]]
}

sbx_read_pid() {
  local file="$1"
  [[ -r "$file" ]] && tr -dc '0-9' <"$file"
}

# Polls CMD... until it succeeds or TIMEOUT seconds have passed. The interval is short because the
# services usually come up in well under a second.
sbx_wait_for() {
  local timeout="$1"
  shift
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then return 1; fi
    sleep 0.1
  done
}

# Sends SIGTERM to PID (only if it still is NAME), waits up to TIMEOUT seconds, then SIGKILL.
sbx_stop_pid() {
  local pid="$1" name="$2" timeout="$3"
  sbx_pid_is "$pid" "$name" || return 0
  kill -TERM "$pid" 2>/dev/null || true
  if ! sbx_wait_for "$timeout" sbx_pid_gone "$pid" "$name"; then
    sbx_log "$name (pid $pid) did not stop within ${timeout}s; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    sbx_wait_for 5 sbx_pid_gone "$pid" "$name" || sbx_log "$name (pid $pid) is still there"
  fi
}

sbx_pid_gone() {
  ! sbx_pid_is "$1" "$2"
}
