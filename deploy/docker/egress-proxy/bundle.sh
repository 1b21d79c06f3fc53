#!/usr/bin/env bash
# Bundles the in-cluster egress proxy (entry.ts, @sbx/egress, @sbx/core) into one ES module at
# OUT, which `node OUT` runs with nothing else installed. Used by deploy/docker/egress-proxy.Dockerfile.
#
# Usage: bash deploy/docker/egress-proxy/bundle.sh OUT   (after npm ci)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "$here/../../.." && pwd)"
out="${1:?usage: bundle.sh OUT}"
esbuild="$repo_root/node_modules/.bin/esbuild"
[[ -x "$esbuild" ]] || { echo "esbuild not found in node_modules (run npm ci first)" >&2; exit 1; }
"$esbuild" "$here/entry.ts" --bundle --platform=node --target=node20 --format=esm \
  --conditions=@sbx/source --minify --keep-names --legal-comments=none --log-level=warning \
  --outfile="$out" \
  --banner:js="import { createRequire as __sbxRequire } from 'node:module'; const require = __sbxRequire(import.meta.url);"
