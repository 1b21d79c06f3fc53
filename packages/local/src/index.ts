// Public API of @sbx/local.
import { LocalSandboxProvider } from './local-sandbox-provider.js';

export { LocalSandbox, MAX_DOWNLOAD_BYTES } from './local-sandbox.js';
export type { LocalSandboxOptions } from './local-sandbox-options.js';
export {
  LocalSandboxProvider,
  createLocalProvider,
  GENERIC_LOCAL_SANDBOX_ID,
  SBX_HOME_ENV,
  DEFAULT_BASE_DIR_NAME,
} from './local-sandbox-provider.js';
// Confined execution (bubblewrap namespaces per thread).
export {
  ISOLATION_MODES,
  DEFAULT_ISOLATION_MODE,
  type IsolationMode,
  type CommandMode,
} from './confinement/isolation-mode.js';
export {
  ConfinementUnavailableError,
  ConfinementStartError,
} from './confinement/confinement-errors.js';
export {
  probeConfinement,
  diagnoseBwrapFailure,
  type ConfinementProbe,
  type ConfinementTools,
} from './confinement/bwrap-probe.js';
export {
  DEFAULT_SANDBOX_UID,
  DEFAULT_SANDBOX_GID,
  type SandboxOwner,
} from './confinement/sandbox-owner.js';
export type { NamespaceLimitsHooks } from './confinement/thread-namespace.js';
export {
  DEFAULT_MAX_CACHED_THREAD_SANDBOXES,
  DEFAULT_THREAD_MAX_AGE_DAYS,
  LOCAL_BLOCK_KEYS,
  validateConfigBlock,
} from './local-config-block.js';
export type {
  LocalProviderOptions,
  LocalProviderConfig,
  LocalMountConfig,
} from './local-provider-options.js';
export { runPosixCommand } from './posix-runner.js';
export type { PosixRunOptions, PosixRunResult } from './posix-runner.js';
export type { SessionObserver, SandboxSessions } from './session-observer.js';
export { findShell, POSIX_SHELL_CANDIDATES } from './shell.js';
// The seccomp program confined commands run under (`bwrap --seccomp FD`), and what it refuses.
export {
  seccompProgram,
  SECCOMP_REFUSED_SYSCALLS,
  SeccompUnsupportedArchError,
  type SeccompArch,
  type RefusedSyscall,
} from './confinement/seccomp-filter.js';
// The command output format lives in @sbx/core (every sandbox shares it); re-exported here so
// code that imported it from @sbx/local keeps working.
export { DEFAULT_COMMAND_TIMEOUT_SECONDS } from '@sbx/core';
export { assembleCommandOutput, timeoutNotice, formatSeconds } from '@sbx/core/internal';
export type { CommandOutcome } from '@sbx/core';
export { BoundedCapture, COMMAND_CAPTURE_LIMIT_BYTES } from './bounded-capture.js';
export { runDemo, type DemoOptions } from './demo.js';
// Confinement limits, cgroups and the host probes `sbx doctor` shows.
export {
  DEFAULT_CONFINEMENT_LIMITS,
  CONFINEMENT_LIMIT_BOUNDS,
  resolveConfinementLimits,
  parseByteSize,
  type ConfinementLimits,
} from './confinement/cgroup-limits.js';
export { LIMITS_BLOCK_KEYS, resolveLimitsBlock } from './confinement/cgroup-limits-config.js';
export {
  detectCgroups,
  type CgroupController,
  type CgroupDetection,
  type CgroupLayout,
} from './confinement/cgroup-detect.js';
export {
  openCgroupHost,
  createSandboxCgroup,
  type CgroupHost,
  type CgroupHostOptions,
} from './confinement/cgroup-host.js';
export type {
  SandboxCgroup,
  CgroupLimitsInForce,
  CgroupMemoryEvents,
} from './confinement/cgroup-sandbox-group.js';
export { ConfinementCgroupError } from './confinement/cgroup-files.js';
export { rlimitArgv, type RlimitWrapper } from './confinement/rlimit-wrapper.js';
export {
  probeConfinementHost,
  type ConfinementCheck,
  type ConfinementCheckStatus,
  type ConfinementProbeOptions,
  type ConfinementReport,
  type LimitEnforcement,
} from './confinement/confinement-probe.js';
export type { ProbeHost, ProbeRun } from './confinement/confinement-probe-host.js';

/** `use: "@sbx/local"` loads this: the provider class. */
export default LocalSandboxProvider;
