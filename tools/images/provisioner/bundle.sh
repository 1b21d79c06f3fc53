#!/usr/bin/env bash
# Bundles the provisioner (its workspace sources, @sbx/core, zod, yaml and the Kubernetes client)
# into one ES module at OUT, which `node OUT` runs with nothing else installed. Used by
# build-images.sh (the local test image) and deploy/docker/provisioner.Dockerfile (for a registry).
#
# Usage: bash tools/images/provisioner/bundle.sh OUT   (after npm ci)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "$here/../../.." && pwd)"
out="${1:?usage: bundle.sh OUT}"
esbuild="$repo_root/node_modules/.bin/esbuild"
[[ -x "$esbuild" ]] || { echo "esbuild not found in node_modules (run npm ci first)" >&2; exit 1; }
# The source condition: built from the workspace sources, no package build needed. The banner
# gives the bundled CommonJS modules (the client's dependencies) a require.
"$esbuild" "$here/image-entry.ts" --bundle --platform=node --target=node20 --format=esm \
  --conditions=@sbx/source --minify --keep-names --legal-comments=none --log-level=warning \
  --outfile="$out" \
  --banner:js="import { createRequire as __sbxRequire } from 'node:module'; const require = __sbxRequire(import.meta.url);"
