#!/usr/bin/env bash
# The project's test command (`npm test`): services, format, lint, build, the generated-docs checks,
# typecheck, every vitest project, then the packaging and registry checks. Every step runs even
# when an earlier one failed (except the steps that need a good build), so one run shows every
# problem; the exit status is non-zero if anything failed.
#
# Services: Redis and Docker are started through tools/services when installed, and stopped again
# at the end unless they were already running. Without them their integration tiers skip with a
# printed reason, unless CI=true or SBX_REQUIRE_SERVICES=1, where a missing service is a failure
# (and the start scripts install the packages when run as root).
#
# Environment: SBX_SERVICES_DIR (service state, default /tmp/sbx-services), SBX_VITEST_JSON (where
# vitest writes its JSON report, default .vitest-results.json at the repository root),
# SBX_VITEST_TIMEOUT (seconds for the whole vitest run, default 1800).
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
services="$root/tools/services"
results_json="${SBX_VITEST_JSON:-$root/.vitest-results.json}"

required=0
if [[ "${CI:-}" == true || "${SBX_REQUIRE_SERVICES:-}" == 1 ]]; then required=1; fi

declare -a started=() summary=() failed=()

stop_started() {
  local name
  for name in "${started[@]}"; do
    echo "==> stopping $name (started by this run)"
    bash "$services/stop-$name.sh" >/dev/null || echo "warning: stopping $name failed" >&2
  done
  started=()
}
# The step running now. Steps run in the background and are waited for, so a signal is handled at
# once instead of after the step; the step is then ended with us. `timeout` (the vitest step) puts
# its command in a process group of its own, hence the group kill first.
current_step_pid=""
on_signal() {
  if [[ -n "$current_step_pid" ]]; then
    kill -TERM -- "-$current_step_pid" 2>/dev/null || kill -TERM "$current_step_pid" 2>/dev/null || true
  fi
  exit "$1"
}
trap stop_started EXIT
# The EXIT trap also runs on Ctrl-C / kill, so services this run started never outlive it.
trap 'on_signal 130' INT
trap 'on_signal 143' TERM

record() {
  local status="$1" name="$2" secs="$3"
  summary+=("$(printf '%-5s %-40s %5ss' "$status" "$name" "$secs")")
  if [[ "$status" == FAIL ]]; then failed+=("$name"); fi
}

step() {
  local name="$1"
  shift
  local t0=$SECONDS
  echo
  echo "==> $name: $*"
  "$@" &
  current_step_pid=$!
  local rc=0
  wait "$current_step_pid" || rc=$?
  current_step_pid=""
  if [[ "$rc" == 0 ]]; then
    record ok "$name" $((SECONDS - t0))
    return 0
  fi
  record FAIL "$name" $((SECONDS - t0))
  return 1
}

# start_service NAME BINARY VAR: brings the project's NAME up (or reuses it) and exports VAR.
start_service() {
  local name="$1" bin="$2" var="$3" t0=$SECONDS out
  echo
  echo "==> service $name"
  if [[ -n "${!var:-}" ]] && ! bash "$services/start-$name.sh" --check 2>/dev/null; then
    # Someone pointed us at their own server: use it as is, start nothing.
    echo "using $var=${!var} from the environment"
    record ok "service $name (external)" $((SECONDS - t0))
    return 0
  fi
  if ! command -v "$bin" >/dev/null 2>&1 && [[ "$required" == 0 ]]; then
    echo "$bin is not installed: $name integration tests will be skipped" \
      "(install it, or set SBX_REQUIRE_SERVICES=1 as root to have it installed)"
    record skip "service $name (not installed)" $((SECONDS - t0))
    return 1
  fi
  local was_running=0
  if bash "$services/start-$name.sh" --check 2>/dev/null; then was_running=1; fi
  if out="$(bash "$services/start-$name.sh")"; then
    eval "$out"
    echo "$out"
    if [[ "$was_running" == 0 ]]; then started+=("$name"); fi
    record ok "service $name" $((SECONDS - t0))
    return 0
  fi
  if [[ "$required" == 1 ]]; then
    record FAIL "service $name" $((SECONDS - t0))
  else
    echo "$name could not be started: its integration tests will be skipped"
    record skip "service $name (failed to start)" $((SECONDS - t0))
  fi
  return 1
}

t_start=$SECONDS

start_service redis redis-server SBX_REDIS_URL || true
if start_service docker dockerd DOCKER_HOST; then
  step "test images" bash tools/images/build-images.sh || true
fi

step "prettier" npx prettier --check . || true
step "eslint" npx eslint . || true
build_ok=0
step "build" npx nx run-many -t build --output-style=stream && build_ok=1
if [[ "$build_ok" == 1 ]]; then
  # Both read the built packages: the reference is generated from core's schema, and the API docs
  # prove every entry point still documents (output in docs/api, not committed).
  step "config reference up to date" node tools/scripts/gen-config-docs.mjs --check || true
  step "api docs" npx typedoc --options docs/typedoc.json --logLevel Error || true
else
  record FAIL "config reference (build failed)" 0
fi
step "typecheck" npx nx run-many -t typecheck --output-style=stream || true
if [[ "$build_ok" == 1 ]]; then
  # The README's commands, as a newcomer runs them on a fresh clone: the demo, then the CLI through
  # npx (--no-install: never the unrelated public package of the same name).
  step "README commands" bash -c 'npm run demo --silent >/dev/null && npx --no-install sbx --help >/dev/null' || true
fi

rm -f "$results_json"
# Bounded: a test stuck in a busy loop blocks vitest's own timeouts, and would otherwise run until
# CI's limit.
step "vitest" timeout -k 30 "${SBX_VITEST_TIMEOUT:-1800}" \
  npx vitest run --reporter=default --reporter=json --outputFile="$results_json" || true

if [[ "$build_ok" == 1 ]]; then
  step "packaging check" node tools/scripts/pack-check.mjs || true
  # Publishes every package to a private registry on loopback and installs + runs the demo from
  # it (third-party dependencies come from the npm registry). Bounded, as it talks to the network.
  step "registry check" timeout -k 10 300 node tools/scripts/registry-check.mjs || true
else
  record FAIL "packaging check (build failed)" 0
  record FAIL "registry check (build failed)" 0
fi

stop_started

echo
echo "==> summary ($((SECONDS - t_start))s)"
printf '%s\n' "${summary[@]}"
if [[ -f "$results_json" ]]; then
  node -e '
    const r = JSON.parse(require("node:fs").readFileSync(process.argv[1], "utf8"));
    console.log(`tests: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests + r.numTodoTests} skipped (of ${r.numTotalTests})`);
  ' "$results_json"
fi
if ((${#failed[@]} > 0)); then
  echo "FAILED: ${failed[*]}"
  exit 1
fi
echo "all steps passed"
