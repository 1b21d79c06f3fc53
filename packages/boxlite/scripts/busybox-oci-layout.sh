#!/usr/bin/env bash
# Builds a minimal OCI image layout (busybox with every applet linked into /bin) from the busybox
# binary on this machine, so the real-runtime test can run on a KVM host without any registry:
#
#   SBX_BOXLITE_ROOTFS="$(bash packages/boxlite/scripts/busybox-oci-layout.sh /tmp/sbx-busybox-oci)" \
#     npx vitest run packages/boxlite/src/boxlite.int.test.ts
#
# Prints the layout directory. Needs a static busybox (Debian: busybox-static), tar, gzip, sha256sum.
set -euo pipefail

out="${1:?usage: busybox-oci-layout.sh OUTPUT_DIR}"
busybox="$(readlink -f "${SBX_BUSYBOX:-$(command -v busybox)}")"
[[ -x "$busybox" ]] || { echo "busybox not found" >&2; exit 1; }
case "$(uname -m)" in
  x86_64) arch=amd64 ;;
  aarch64) arch=arm64 ;;
  *) echo "unsupported architecture $(uname -m)" >&2; exit 1 ;;
esac

work="$(mktemp -d "${TMPDIR:-/tmp}/sbx-oci.XXXXXX")"
trap 'rm -rf "$work"' EXIT
rootfs="$work/rootfs"
mkdir -p "$rootfs/bin" "$rootfs/tmp" "$rootfs/etc" "$rootfs/root" "$rootfs/mnt"
chmod 1777 "$rootfs/tmp"
cp "$busybox" "$rootfs/bin/busybox"
for applet in $("$rootfs/bin/busybox" --list); do
  [[ "$applet" == busybox ]] || ln -s busybox "$rootfs/bin/$applet"
done
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$rootfs/etc/passwd"
printf 'root:x:0:\n' >"$rootfs/etc/group"

rm -rf "$out"
mkdir -p "$out/blobs/sha256"
blob() { # FILE -> digest (copies FILE into the layout)
  local digest
  digest="$(sha256sum "$1" | cut -d' ' -f1)"
  cp "$1" "$out/blobs/sha256/$digest"
  printf '%s' "$digest"
}

tar --numeric-owner --owner=0 --group=0 --sort=name --mtime=@0 -C "$rootfs" -cf "$work/layer.tar" .
gzip -n -c "$work/layer.tar" >"$work/layer.tar.gz"
diff_id="$(sha256sum "$work/layer.tar" | cut -d' ' -f1)"
layer="$(blob "$work/layer.tar.gz")"
layer_size="$(stat -c %s "$work/layer.tar.gz")"

printf '{"architecture":"%s","os":"linux","config":{"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],"Cmd":["/bin/sh"],"WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
  "$arch" "$diff_id" >"$work/config.json"
config="$(blob "$work/config.json")"
config_size="$(stat -c %s "$work/config.json")"

printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:%s","size":%s}]}' \
  "$config" "$config_size" "$layer" "$layer_size" >"$work/manifest.json"
manifest="$(blob "$work/manifest.json")"
manifest_size="$(stat -c %s "$work/manifest.json")"

printf '{"imageLayoutVersion":"1.0.0"}' >"$out/oci-layout"
printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"annotations":{"org.opencontainers.image.ref.name":"latest"}}]}' \
  "$manifest" "$manifest_size" >"$out/index.json"
printf '%s\n' "$out"
