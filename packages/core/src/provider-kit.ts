// @sbx/core/provider-kit: the lifecycle pieces a provider is built from. Public for provider
// authors (the sbx providers use exactly these): the ownership client, one periodic task for every
// timer, the per-id sandbox book and the reconciliation verdicts. Host applications need none of it.

export { collectBoundedBytes } from './provider-kit/bounded-bytes.js';
export type { BoundedBytesOptions } from './provider-kit/bounded-bytes.js';
export { OwnershipClient } from './provider-kit/ownership-client.js';
export type { ClaimOutcome, OwnershipClientOptions } from './provider-kit/ownership-client.js';
export { describeLease } from './ownership/lease-peek.js';
export type { LeasePeek } from './ownership/lease-peek.js';
export { OwnershipLink } from './provider-kit/ownership-link.js';
export type { OwnershipLinkOptions } from './provider-kit/ownership-link.js';
export { PeriodicTask } from './provider-kit/periodic-task.js';
export { SingleFlight } from './async/single-flight.js';
export type { PeriodicTaskOptions } from './provider-kit/periodic-task.js';
export { SandboxBook } from './provider-kit/sandbox-book.js';
export type { SandboxBookOptions, SandboxBookState } from './provider-kit/sandbox-book.js';
export { ageVerdict, leaseGraceVerdict } from './reconciliation/grace-verdicts.js';
export type {
  AgeVerdict,
  LeaseGraceInput,
  LeaseGraceVerdict,
} from './reconciliation/grace-verdicts.js';
export { Sightings } from './reconciliation/sightings.js';
export { lapsedLeaseVerdict } from './reconciliation/lapsed-lease-verdict.js';
export type {
  LapsedLeaseInput,
  LapsedLeaseVerdict,
} from './reconciliation/lapsed-lease-verdict.js';
export { RegistrySandboxProvider } from './provider-kit/registry-provider.js';
export { RemoteShellSandbox } from './provider-kit/remote-shell-sandbox.js';
export type { RegistryProviderOptions } from './provider-kit/registry-provider.js';

// Building blocks the kit is made of, for providers that need them directly.
export {
  assertSameThreadIdentity,
  describeThreadIdentity,
  sameThreadIdentity,
} from './identity/thread-identity.js';
export { deriveSandboxScopeToken, identityScopesFor } from './identity/identity.js';
export { ResettableAcquireSerializer } from './serializer/resettable-acquire-serializer.js';
export { AcquireSerializer, serializerKey } from './serializer/acquire-serializer.js';
export { createLeaseOwnerId } from './execution-leases/lease-context.js';
export { runLifecycleOperation } from './execution-leases/lease-client.js';
export { WarmPoolRegistry } from './warm-pool/warm-pool-registry.js';
export {
  DEFAULT_IDLE_CHECK_INTERVAL_SECONDS,
  DEFAULT_IDLE_TIMEOUT_SECONDS,
  DEFAULT_REPLICAS,
  WarmPool,
} from './warm-pool/warm-pool.js';
export { LeaseValue, createOwnerId, leaseTtlSeconds } from './ownership/ownership-store.js';
export { MemoryLeaseTable } from './ownership/memory-ownership-store.js';
export { TEARDOWN_JOIN_TIMEOUT_MS, withHeldTeardownLease } from './ownership/teardown-lease.js';
export { requiredLiteral } from './search/grep-literal.js';
export { translatePythonRegex } from './search/grep-pattern.js';
export { regexToPosixEre } from './search/grep-ere.js';
export { remoteOutputLimit } from './search/search-remote.js';
export { buildFindCommand, parseFindOutput, planRemoteGlob } from './search/search-remote-glob.js';
export { buildGrepCommand, parseGrepOutput, planRemoteGrep } from './search/search-remote-grep.js';
export {
  buildListDirCommand,
  parseListDirOutput,
  planRemoteListDir,
} from './search/search-remote-list-dir.js';
export { boundedHealthCheck } from './contract/bounded-health-check.js';
export {
  assertDownloadablePath,
  assertSandboxFilePath,
  decodeFileText,
} from './contract/sandbox-file-checks.js';
export { assembleCommandOutput, formatSeconds, timeoutNotice } from './command/command-output.js';
export { SandboxProviderEventEmitter } from './contract/provider-events.js';
export { specIdentityScope } from './contract/sandbox-spec.js';

// Commands as processes: the table behind `sandbox.processes`, the launcher hook a provider
// implements for it, and the pieces every provider's `exec` shares.
export {
  DEFAULT_KEPT_ENDED_PROCESSES,
  DEFAULT_MAX_RUNNING_PROCESSES,
  ProcessTable,
} from './process/process-table.js';
export {
  DEFAULT_PROCESS_WRITE_TIMEOUT_MS,
  MAX_PROCESS_WRITE_BYTES,
} from './process/process-input.js';
export type { ProcessTableOptions } from './process/process-table.js';
export type {
  InputWriteOptions,
  LaunchOptions,
  LaunchedExit,
  AttachedProcess,
  LaunchedProcess,
  ProcessLauncher,
  ProcessSink,
} from './process/process-launcher.js';
export {
  DEFAULT_PROCESS_OUTPUT_BYTES,
  MAX_PROCESS_OUTPUT_READ_BYTES,
  OutputRing,
} from './process/output-ring.js';
export type { OutputRingOptions, OutputStream } from './process/output-ring.js';
export {
  DEFAULT_RETAINED_OUTPUT_BYTES,
  RetainedOutput,
  sharedRetainedOutput,
} from './process/retained-output.js';
export {
  DEFAULT_OUTPUT_BYTES_PER_SECOND,
  DEFAULT_OUTPUT_BYTES_PER_TURN,
  OutputPacer,
  sharedOutputPacer,
} from './process/output-pacer.js';
export type { OutputCredit, OutputPacerOptions, PacedStream } from './process/output-pacer.js';
export {
  DEFAULT_PACED_QUEUE_BYTES,
  PacedListener,
  pacedTextListener,
} from './process/paced-listener.js';
export type {
  PacedListenerOptions,
  PacedTarget,
  PacedTextListener,
} from './process/paced-listener.js';
export { Utf8Listener } from './process/utf8-listener.js';
export { execResultText } from './contract/exec-result-text.js';
export {
  MAX_COMMAND_BYTES,
  MAX_EXEC_STDIN_BYTES,
  assertCommandText,
  assertExecSupported,
  assertProcessTimeout,
} from './process/process-limits.js';
export { killedAtLimit, oneShotExecResult } from './process/one-shot-exec.js';
export type { OneShotOutcome } from './process/one-shot-exec.js';
export { guardedListener } from './process/guarded-listener.js';
export {
  DEFAULT_EXEC_CAPTURE_BYTES,
  KILLED_COMMAND_GRACE_MS,
  execViaLauncher,
} from './process/launcher-exec.js';
export { limitSeconds, remoteCommandProcess } from './process/remote-command.js';
export type {
  RemoteCommandControl,
  RemoteCommandHooks,
  ShellLaunchHooks,
} from './process/remote-command.js';
export type { LauncherExecOptions } from './process/launcher-exec.js';
