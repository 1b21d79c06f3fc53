#!/usr/bin/env bash
# Builds the local test images from binaries already on this machine and `docker import`s them.
# Nothing is pulled from a registry.
#
#   sbx-test/busybox:1   busybox (static) with every applet linked into /bin
#   sbx-test/node:1      the host's node binary and the shared libraries it links, plus busybox
#                        as /bin/sh and the usual applets, so JS servers can run in a container
#   sbx-test/aio-standin:1  the node image plus tools/images/aio-standin/*.mjs, a stand-in
#                        for the all-in-one sandbox API (listens on 127.0.0.1:$SBX_AIO_PORT)
#   sbx-test/provisioner:1  the node image plus @sbx/provisioner bundled into one file with the
#                        Kubernetes client (tools/images/provisioner/image-entry.ts), run as uid
#                        65532; needs the repository's node_modules (npm ci) for the bundler
#
# Usage: DOCKER_HOST=unix:///tmp/sbx-services/docker.sock bash tools/images/build-images.sh
#        (or `source tools/services/start-docker.sh` first). --force rebuilds regardless.
#
# Idempotent: each image carries a label `sbx.inputs` with a hash of everything that went into it
# (the binaries, their libraries, this script); an image whose label matches is left alone.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
force=0
if [[ "${1:-}" == "--force" ]]; then force=1; fi

BUSYBOX_TAG="sbx-test/busybox:1"
NODE_TAG="sbx-test/node:1"
AIO_STANDIN_TAG="sbx-test/aio-standin:1"
PROVISIONER_TAG="sbx-test/provisioner:1"
aio_standin_dir="$here/aio-standin"
aio_standin_modules=("$aio_standin_dir"/*.mjs)

log() { printf '[sbx-images] %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

command -v docker >/dev/null 2>&1 || die "docker client not found"
docker version >/dev/null 2>&1 ||
  die "no docker daemon answers at ${DOCKER_HOST:-the default socket}; source tools/services/start-docker.sh first"

busybox_bin="${SBX_BUSYBOX:-$(command -v busybox || true)}"
[[ -x "$busybox_bin" ]] || die "busybox not found (Debian: apt-get install busybox-static)"
busybox_bin="$(readlink -f "$busybox_bin")"
node_bin="$(readlink -f "${SBX_NODE:-$(command -v node)}")"
[[ -x "$node_bin" ]] || die "node not found"

work="$(mktemp -d "${TMPDIR:-/tmp}/sbx-images.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# Shared libraries BIN loads, as absolute paths (the dynamic loader included); none for a static one.
libs_of() {
  ldd "$1" 2>/dev/null | sed -nE 's#.*=> (/[^ ]+) .*#\1#p; s#^[[:space:]]*(/[^ ]+) \(0x.*#\1#p' | sort -u
}

# Copies FILE into ROOTFS at the same path, following symlinks (the image has no other copy).
copy_into() {
  local rootfs="$1" file="$2"
  mkdir -p "$rootfs$(dirname "$file")"
  cp -L "$file" "$rootfs$file"
}

# A rootfs with busybox at /bin/busybox, its libraries if it is not static, an applet link for
# every applet, and the few files a process expects (/tmp, /etc/passwd).
busybox_rootfs() {
  local rootfs="$1" applet lib
  mkdir -p "$rootfs/bin" "$rootfs/tmp" "$rootfs/etc" "$rootfs/root"
  chmod 1777 "$rootfs/tmp"
  cp -L "$busybox_bin" "$rootfs/bin/busybox"
  for lib in $(libs_of "$busybox_bin"); do copy_into "$rootfs" "$lib"; done
  for applet in $("$busybox_bin" --list); do
    [[ "$applet" == busybox ]] || ln -sf busybox "$rootfs/bin/$applet"
  done
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$rootfs/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$rootfs/etc/group"
}

inputs_hash() {
  local f
  {
    sha256sum "$here/build-images.sh"
    for f in "$@"; do sha256sum "$f"; done
  } | sed -E 's/ .*//' | sha256sum | cut -c1-32
}

current_label() {
  docker image inspect -f '{{ index .Config.Labels "sbx.inputs" }}' "$1" 2>/dev/null || true
}

# import TAG ROOTFS HASH CMD ENV...
import_rootfs() {
  local tag="$1" rootfs="$2" hash="$3" cmd="$4"
  shift 4
  local changes=(-c "LABEL sbx.inputs=$hash" -c "CMD $cmd")
  if [[ -n "${IMPORT_USER:-}" ]]; then changes+=(-c "USER $IMPORT_USER"); fi
  local env old
  for env in "$@"; do changes+=(-c "ENV $env"); done
  old="$(docker image inspect -f '{{.Id}}' "$tag" 2>/dev/null || true)"
  tar --numeric-owner -C "$rootfs" -c . | docker import "${changes[@]}" - "$tag" >/dev/null
  # The superseded image would otherwise linger untagged in the data root forever.
  if [[ -n "$old" && "$old" != "$(docker image inspect -f '{{.Id}}' "$tag")" ]]; then
    docker image rm "$old" >/dev/null 2>&1 || log "kept superseded image $old (still in use)"
  fi
}

build_busybox() {
  local hash
  # shellcheck disable=SC2046
  hash="$(inputs_hash "$busybox_bin" $(libs_of "$busybox_bin"))"
  if [[ "$force" == 0 && "$(current_label "$BUSYBOX_TAG")" == "$hash" ]]; then
    log "$BUSYBOX_TAG is up to date ($hash)"
    return
  fi
  local rootfs="$work/busybox"
  busybox_rootfs "$rootfs"
  import_rootfs "$BUSYBOX_TAG" "$rootfs" "$hash" '["/bin/sh"]' 'PATH=/bin'
  [[ "$(docker run --rm --network none "$BUSYBOX_TAG" echo ok)" == ok ]] ||
    die "$BUSYBOX_TAG does not run"
  log "built $BUSYBOX_TAG ($hash)"
}

build_node() {
  local hash lib
  # shellcheck disable=SC2046
  hash="$(inputs_hash "$node_bin" $(libs_of "$node_bin") "$busybox_bin" $(libs_of "$busybox_bin"))"
  if [[ "$force" == 0 && "$(current_label "$NODE_TAG")" == "$hash" ]]; then
    log "$NODE_TAG is up to date ($hash)"
    return
  fi
  local rootfs="$work/node"
  busybox_rootfs "$rootfs"
  mkdir -p "$rootfs/usr/local/bin"
  cp -L "$node_bin" "$rootfs/usr/local/bin/node"
  for lib in $(libs_of "$node_bin"); do copy_into "$rootfs" "$lib"; done
  import_rootfs "$NODE_TAG" "$rootfs" "$hash" '["node"]' 'PATH=/usr/local/bin:/bin' 'HOME=/root'
  local got
  got="$(docker run --rm --network none "$NODE_TAG" node -e 'process.stdout.write(process.version)')"
  [[ "$got" == "$("$node_bin" -e 'process.stdout.write(process.version)')" ]] ||
    die "$NODE_TAG does not run node (got: $got)"
  log "built $NODE_TAG ($hash, node $got)"
}

# The node rootfs with the AIO stand-in server at /opt/sbx-aio/server.mjs as the command.
build_aio_standin() {
  local hash lib
  # shellcheck disable=SC2046
  hash="$(inputs_hash "$node_bin" $(libs_of "$node_bin") "$busybox_bin" $(libs_of "$busybox_bin") "${aio_standin_modules[@]}")"
  if [[ "$force" == 0 && "$(current_label "$AIO_STANDIN_TAG")" == "$hash" ]]; then
    log "$AIO_STANDIN_TAG is up to date ($hash)"
    return
  fi
  local rootfs="$work/aio-standin"
  busybox_rootfs "$rootfs"
  mkdir -p "$rootfs/usr/local/bin" "$rootfs/opt/sbx-aio" "$rootfs/mnt"
  cp -L "$node_bin" "$rootfs/usr/local/bin/node"
  for lib in $(libs_of "$node_bin"); do copy_into "$rootfs" "$lib"; done
  cp "${aio_standin_modules[@]}" "$rootfs/opt/sbx-aio/"
  import_rootfs "$AIO_STANDIN_TAG" "$rootfs" "$hash" '["node","/opt/sbx-aio/server.mjs"]' \
    'PATH=/usr/local/bin:/bin' 'HOME=/root'
  local got
  got="$(docker run --rm --network none "$AIO_STANDIN_TAG" node -e 'import("/opt/sbx-aio/server.mjs").then((m) => process.stdout.write(typeof m.createAioStandin))')"
  [[ "$got" == function ]] || die "$AIO_STANDIN_TAG does not load its server (got: $got)"
  log "built $AIO_STANDIN_TAG ($hash)"
}

# The node rootfs with the provisioner bundle at /opt/sbx-provisioner/provisioner.mjs as the
# command, listening on all interfaces as a Pod must (tests override PROVISIONER_HOST).
build_provisioner() {
  local bundle="$work/provisioner.mjs"
  bash "$here/provisioner/bundle.sh" "$bundle" || die "could not bundle the provisioner"
  local hash
  # shellcheck disable=SC2046
  hash="$(inputs_hash "$node_bin" $(libs_of "$node_bin") "$busybox_bin" $(libs_of "$busybox_bin") "$bundle")"
  if [[ "$force" == 0 && "$(current_label "$PROVISIONER_TAG")" == "$hash" ]]; then
    log "$PROVISIONER_TAG is up to date ($hash)"
    return
  fi
  local rootfs="$work/provisioner"
  busybox_rootfs "$rootfs"
  mkdir -p "$rootfs/usr/local/bin" "$rootfs/opt/sbx-provisioner"
  cp -L "$node_bin" "$rootfs/usr/local/bin/node"
  for lib in $(libs_of "$node_bin"); do copy_into "$rootfs" "$lib"; done
  cp "$bundle" "$rootfs/opt/sbx-provisioner/provisioner.mjs"
  chmod 0644 "$rootfs/opt/sbx-provisioner/provisioner.mjs"
  # uid 65532, the Deployment's runAsUser: the image never needs root.
  IMPORT_USER=65532:65532 import_rootfs "$PROVISIONER_TAG" "$rootfs" "$hash" '["node","/opt/sbx-provisioner/provisioner.mjs"]' \
    'PATH=/usr/local/bin:/bin' 'HOME=/tmp' 'PROVISIONER_HOST=0.0.0.0' 'PROVISIONER_PORT=8002'
  local got
  got="$(docker run --rm --network none -e PROVISIONER_PORT=x "$PROVISIONER_TAG" 2>&1 || true)"
  [[ "$got" == *PROVISIONER_PORT* ]] || die "$PROVISIONER_TAG does not run its entry (got: $got)"
  log "built $PROVISIONER_TAG ($hash)"
}

build_busybox
build_node
build_aio_standin
build_provisioner
