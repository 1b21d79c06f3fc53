// Public API of @sbx/core. Each block belongs to one concept; keep exports explicit.

// --- errors
export * from './errors/errors.js';
export * from './errors/process-errors.js';
export { SkillPolicyViewError } from './errors/skill-policy-errors.js';
export {
  CapabilityNotSupportedError,
  SandboxBusyError,
  SnapshotExpiredError,
  SnapshotNotFoundError,
} from './errors/capability-errors.js';
export type { SandboxCapability } from './errors/capability-errors.js';
export {
  CheckpointEntryRefusedError,
  CheckpointIntegrityError,
  CheckpointLimitError,
} from './errors/checkpoint-errors.js';
export type { CheckpointLimitName } from './errors/checkpoint-errors.js';

// --- optional dependencies
export { loadOptionalDependency } from './modules/optional-dependency.js';

// --- contract
export { Sandbox } from './contract/sandbox.js';
export { FULL_PROCESS_CAPABILITIES, ONE_SHOT_CAPABILITIES } from './contract/sandbox-exec.js';
export type {
  ExecOptions,
  ExecResult,
  OutputListener,
  ProcessInput,
  SandboxCapabilities,
} from './contract/sandbox-exec.js';
export { PROCESS_SIGNALS } from './contract/sandbox-processes.js';
export type {
  ProcessExit,
  ProcessHandle,
  ProcessInfo,
  ProcessOutput,
  ProcessOutputOptions,
  ProcessSignal,
  ProcessStartOptions,
  ProcessStatus,
  ProcessWriteOptions,
  SandboxProcesses,
} from './contract/sandbox-processes.js';
export type {
  ExecuteCommandOptions,
  ScopedExecuteCommandOptions,
  ReadFileOptions,
  WriteFileOptions,
  ListDirOptions,
  GlobOptions,
  GlobResult,
  GrepOptions,
  GrepMatch,
  GrepResult,
} from './contract/sandbox.js';
export { SandboxProvider } from './contract/sandbox-provider.js';
export type {
  AcquireOptions,
  AgentSkillPolicy,
  SkillProjectionCategory,
  SkillsView,
  SyncAgentSkillsOptions,
} from './contract/sandbox-provider.js';
export { NO_LIFECYCLE_SUPPORT } from './contract/sandbox-lifecycle.js';
export type { SandboxLifecycleSupport, SnapshotRef } from './contract/sandbox-lifecycle.js';

// @section config

export type {
  CheckpointConfig,
  OpenConfigBlock,
  OverflowPolicy,
  OwnershipConfig,
  OwnershipType,
  ProviderBlockKey,
  ReadBeforeWriteConfig,
  SandboxConfig,
  SkillsConfig,
  ToolLimitConfig,
  ToolsConfig,
  VolumeMountConfig,
  WarmPoolConfig,
} from './config/config.js';

export type { SandboxConfigInput, SandboxSchemaContext } from './config/config-section-schema.js';

export { loadSandboxConfig, parseSandboxConfig } from './config/config-loader.js';

export type { ConfigBlockValidator } from './config/config-block.js';
export type { ParseSandboxConfigOptions, SandboxConfigSource } from './config/config-loader.js';
export { resolveOwnershipConfig } from './config/config-ownership.js';
export type {
  OwnershipSource,
  ResolveOwnershipOptions,
  ResolvedOwnershipConfig,
} from './config/config-ownership.js';
export { listSandboxConfigKeys, sandboxConfigJsonSchema } from './config/config-reference.js';
export type { ConfigKeyInfo } from './config/config-reference.js';

// @section identity
export type { ThreadIdentity } from './identity/thread-identity.js';
export { isValidSandboxId, resolveEffectiveUserId } from './identity/identity.js';
export {
  MAX_ID_LENGTH,
  assertValidThreadIdentity,
  isValidThreadIdentity,
} from './identity/thread-id-rules.js';
export type { ThreadIdentityInput } from './identity/thread-id-rules.js';
export type { SandboxScope, SandboxScopeTokenInput } from './identity/identity.js';

// @section provisioner-contract
export {
  canonicalSkillsRoot,
  provisionerExtraMountPaths,
} from './contract/provisioner-contract.js';
export type { ProvisionerMount } from './contract/provisioner-contract.js';

// @section provider-loading

export type { ProviderSpecifier } from './modules/provider-specifier.js';
export { loadProviderClass } from './provider-kit/provider-loader.js';

export type {
  LoadProviderOptions,
  LoadedProvider,
  ModuleImporter,
  SandboxProviderClass,
  SandboxProviderFactory,
  SandboxProviderInit,
} from './provider-kit/provider-loader.js';
export {
  getSandboxProvider,
  onProviderDetached,
  resetSandboxProvider,
  setSandboxProvider,
  shutdownSandboxProvider,
} from './provider-kit/default-provider.js';
export type {
  DefaultProviderLifecycleOptions,
  GetSandboxProviderOptions,
  ProviderDetachReason,
  ProviderDetachedListener,
} from './provider-kit/default-provider.js';

export { canListSandboxes, canReapOrphans } from './contract/sandbox-inspection.js';
export type {
  ListSandboxesOptions,
  OrphanCollectingProvider,
  OrphanReapReport,
  ReapOrphansOptions,
  SandboxListingProvider,
  SandboxSummary,
} from './contract/sandbox-inspection.js';

// @section acquire-serializer
export { throwIfAborted } from './async/throw-if-aborted.js';
export { sleep } from './async/sleep.js';
export type { SleepOptions } from './async/sleep.js';
export type { ResettableAcquireSerializerOptions } from './serializer/resettable-acquire-serializer.js';
export type {
  AcquireSerializerOptions,
  SerializerKeyPart,
  SerializerLease,
  SerializerWaitOptions,
} from './serializer/acquire-serializer.js';

// @section lease-manager
export { SandboxLeaseManager } from './execution-leases/lease-manager.js';
export {
  getSandboxLeaseManager,
  discardSandboxLeaseManager,
} from './execution-leases/lease-manager-registry.js';
export type {
  LeaseProvider,
  LeaseIdentity,
  LeaseAcquireOptions,
  LeaseRetainOptions,
  LeaseReuseOptions,
  LeaseReleaseOptions,
  SandboxLeaseManagerOptions,
  LeaseBindingSnapshot,
  LeaseManagerSnapshot,
  IdleTeardownReservation,
} from './execution-leases/lease-types.js';
export {
  SERVER_OWNED_CONTEXT_KEYS,
  scrubServerOwnedContext,
  ensureSandboxLeaseOwner,
} from './execution-leases/lease-context.js';
export type { ServerOwnedContextKey } from './execution-leases/lease-context.js';
export { acquireSandboxClientLease } from './execution-leases/lease-client.js';
export type {
  SandboxClientLease,
  SandboxClientLeaseOptions,
  LifecycleOperationOptions,
} from './execution-leases/lease-client.js';

// @section checkpoint
export { writeCheckpoint } from './checkpoint/checkpoint-export.js';
export type {
  CheckpointSources,
  CheckpointSummary,
  SkippedEntry,
  WriteCheckpointOptions,
} from './checkpoint/checkpoint-export.js';
export { readCheckpoint } from './checkpoint/checkpoint-import.js';
export type {
  CheckpointImportSummary,
  ReadCheckpointOptions,
} from './checkpoint/checkpoint-import.js';
export {
  CHECKPOINT_FORMAT,
  CHECKPOINT_MANIFEST_NAME,
  CHECKPOINT_ROOTS,
  CHECKPOINT_VERSION,
  DEFAULT_CHECKPOINT_LIMITS,
} from './checkpoint/checkpoint-format.js';
export type {
  CheckpointLimits,
  CheckpointManifest,
  CheckpointManifestEntry,
  CheckpointRootName,
} from './checkpoint/checkpoint-format.js';
export {
  SNAPSHOT_SWEEP_MAX_ENTRIES,
  SnapshotArchiveStore,
} from './checkpoint/snapshot-archive-store.js';
export type { SnapshotArchiveStoreOptions } from './checkpoint/snapshot-archive-store.js';
export { checkpointLimitsOf } from './checkpoint/checkpoint-config.js';

// @section warm-pool
export type { WarmPoolRegistryOptions, WarmPoolSettings } from './warm-pool/warm-pool-registry.js';
export type {
  WarmEntry,
  WarmPoolOptions,
  WarmPoolDestroyReason,
  TeardownReservation,
  WarmPoolCapacityResult,
} from './warm-pool/warm-pool.js';
export { systemClock } from './async/clock.js';
export type { Clock, ClockTimer, ClockTimeoutOptions } from './async/clock.js';

// @section ownership-store
export { RenewOutcome } from './ownership/ownership-store.js';
export type {
  OwnershipStore,
  ClaimOptions,
  LeaseState,
  LeaseHolder,
  LeaseTimingConfig,
} from './ownership/ownership-store.js';
export { MemoryOwnershipStore } from './ownership/memory-ownership-store.js';
export type { MemoryOwnershipStoreOptions } from './ownership/memory-ownership-store.js';
export { createOwnershipStore } from './stores/ownership-store-factory.js';
export type {
  OwnershipRedisModule,
  OwnershipStoreFactoryOptions,
  CreateOwnershipStoreOptions,
} from './stores/ownership-store-factory.js';
export type { HeldTeardownLeaseOptions } from './ownership/teardown-lease.js';

// @section capacity-store
export { CapacityReserveOutcome } from './capacity/capacity-store.js';
export type {
  CapacityStore,
  CapacityInventory,
  CapacityInventoryEntry,
} from './capacity/capacity-store.js';
export { MemoryCapacityStore, MemoryCapacityLedger } from './capacity/memory-capacity-store.js';
export type { MemoryCapacityStoreOptions } from './capacity/memory-capacity-store.js';
export { createCapacityStore } from './stores/capacity-store-factory.js';
export type { CreateCapacityStoreOptions } from './stores/capacity-store-factory.js';

// @section env-policy
export {
  BLOCKED_ENV_NAMES,
  REDACTED_PLACEHOLDER,
  buildSandboxEnv,
  isSecretEnvName,
  redactSecrets,
  secretsForLines,
  validateExtraEnv,
} from './config/env-policy.js';
export type { BuildSandboxEnvOptions, EnvPolicyMode } from './config/env-policy.js';

// @section search
export { IGNORE_PATTERNS, shouldIgnoreName } from './search/search-ignore.js';
export type { IgnoreOptions } from './search/search-ignore.js';

export { SearchWorkerPool, matchingLineIndices } from './search/search-worker-pool.js';
export type { LineTestOptions, SearchWorkerPoolOptions } from './search/search-worker-pool.js';
export { compareRelativePaths } from './search/search-order.js';
export { compileGlob, pathMatchesGlob } from './search/glob-match.js';
export type { GlobMatcher, GlobMatchOptions } from './search/glob-match.js';

export type { GrepPatternOptions, TranslatedRegex } from './search/grep-pattern.js';
export type { LocalSearchOptions } from './search/search-walk.js';
export { findGlobMatches } from './search/glob-find.js';
export type { FindGlobOptions } from './search/glob-find.js';
export { findGrepMatches } from './search/grep-find.js';
export type { FindGrepOptions } from './search/grep-find.js';
export { listDirTree } from './search/list-dir.js';
export type { ListDirTreeOptions } from './search/list-dir.js';
export { shellQuote } from './command/shell-quote.js';
export type { RemoteParseOptions, RemoteSearchPlan } from './search/search-remote.js';
export type { RemoteGlobOptions } from './search/search-remote-glob.js';
export type { RemoteGrepOptions } from './search/search-remote-grep.js';
export type { RemoteListDirOptions } from './search/search-remote-list-dir.js';

// @section virtual-paths
export { DEFAULT_SKILLS_CONTAINER_PATH } from './paths/virtual-paths.js';
export type { SkillCategory, UserDataSubdir, ThreadDataPaths } from './paths/virtual-paths.js';
export { assertSafePathSegment, threadLayout } from './paths/virtual-paths-layout.js';
export type { ThreadLayout } from './paths/virtual-paths-layout.js';
export { replaceVirtualPath, replaceVirtualPathsInCommand } from './paths/virtual-paths-thread.js';
export type { ThreadPathCorrespondence } from './paths/virtual-paths-thread.js';
export { PathMappingTable, pathMapping, OUTSIDE_MOUNTS_MESSAGE } from './paths/path-mapping.js';
export { MAX_PATH_BYTES } from './paths/path-limits.js';

export type { ConfinedOpenOptions } from './host/host-confinement.js';
export type { PathMappingTableOptions } from './paths/path-mapping.js';
export type { PathMapping, ResolvedPath, PathAccess } from './paths/path-mapping.js';

export { translateContainerPaths } from './paths/path-mapping-translate.js';
export type { TranslationMode, ContainerPathOccurrence } from './paths/path-mapping-translate.js';
export {
  buildOutputMaskPattern,
  scanPathOccurrences,
  HostPathMasker,
  resolveHostRoot,
  maskLocalPathsInOutput,
} from './paths/path-masking.js';
export type { MaskSource, MaskOptions, LocalMaskOptions } from './paths/path-masking.js';
export {
  validateLocalToolPath,
  resolveAndValidateUserDataPath,
  existingMounts,
} from './paths/path-validation.js';
export type { VirtualRootsOptions, LocalToolPathOptions } from './paths/path-validation.js';
export { validateLocalBashCommandPaths, mcpFilesystemRoots } from './host/bash-path-guard.js';
export type { BashPathGuardOptions, McpServerArgs } from './host/bash-path-guard.js';
export { LOCAL_HOST_BASH_DISABLED_MESSAGE, allowsHostBash } from './host/host-bash.js';
export type { HostBashConfig } from './host/host-bash.js';

// @section tools
export { getToolDefinitions } from './tools/tool-definitions.js';
export type {
  ToolDefinition,
  ToolDefinitionOptions,
  JsonSchema,
} from './tools/tool-definitions.js';

export {
  ALL_TOOL_NAMES,
  MAX_COMMAND_BYTES,
  PROCESS_TOOL_NAMES,
  TOOL_INPUT_SCHEMAS,
  TOOL_NAMES,
} from './tools/tool-schemas.js';
export type {
  ToolName,
  ToolInputs,
  ParsedToolInputs,
  BashInput,
  LsInput,
  GlobInput,
  GrepInput,
  ReadFileInput,
  WriteFileInput,
  StrReplaceInput,
  ProcessKillInput,
  ProcessListInput,
  ProcessOutputInput,
  ProcessWriteInput,
} from './tools/tool-schemas.js';
export { runTool, runToolCall } from './tools/run-tool.js';
export { ToolErrorCode, toolFailure } from './tools/tool-result.js';
/** The message of anything thrown (`String(err)` for non-errors): the one helper for log fields. */
export { errorMessage } from './errors/error-inspection.js';
export type { ToolCallResult, ToolErrorCodeValue } from './tools/tool-result.js';
export type { CommandDetails } from './tools/command-details.js';
export { createToolRunner } from './tools/tool-runner.js';
export type { ToolCallOptions, ToolRunner, ToolRunnerOptions } from './tools/tool-runner.js';
export { MAX_RUN_THREADS, ThreadRunners } from './tools/thread-runners.js';
export type { RunIdentity } from './tools/thread-runners.js';
export { MAX_STREAMED_OUTPUT_CHARS } from './tools/tool-output.js';
export type { ToolOutputChunk, ToolOutputListener } from './tools/tool-output.js';

export type { RawToolArguments, StandardJsonSchemaV1 } from './tools/tool-standard-schema.js';
export { bashTool } from './tools/bash-tool.js';
export { lsTool } from './tools/ls-tool.js';
export { globTool } from './tools/glob-tool.js';
export { grepTool } from './tools/grep-tool.js';
export { readFileTool } from './tools/read-file-tool.js';
export { writeFileTool } from './tools/write-file-tool.js';
export { strReplaceTool } from './tools/str-replace-tool.js';
export { CommandFailureCode } from './tools/bash-tool.js';
export {
  processKillTool,
  processListTool,
  processOutputTool,
  processWriteTool,
} from './tools/process-tools.js';
export { createToolContext } from './tools/create-tool-context.js';
export { createSandbox } from './tools/create-sandbox.js';
export type { CreateSandboxOptions, DisposableSandbox } from './tools/create-sandbox.js';
export type { CreateToolContextOptions } from './tools/create-tool-context.js';
export type {
  ToolContext,
  ToolState,
  ToolLeaseManager,
  ToolEnvSource,
  SandboxAcquireRequest,
  SandboxAcquireStrategy,
  SandboxAuthorizer,
  LocalToolEnvironment,
} from './tools/tool-context.js';
export { toolConfigFromSandboxConfig } from './tools/tool-config.js';
export type { ToolConfig, ToolConfigInput } from './tools/tool-config.js';
export { ToolSession } from './tools/tool-session.js';
export type { ToolSessionSnapshot } from './tools/tool-session.js';
export {
  runToolInvocation,
  currentToolInvocation,
  authorizeSandboxUse,
} from './tools/tool-invocation.js';
export type { ToolInvocation } from './tools/tool-invocation.js';
export { ensureSandboxInitialized } from './tools/ensure-sandbox.js';

export type { ReadBeforeWriteCheck } from './tools/read-before-write.js';
export { fileOperationLock } from './tools/file-operation-lock.js';
export { localToolEnvironment } from './tools/local-sandbox-guard.js';
export type { LocalToolEnvironmentSource } from './tools/local-sandbox-guard.js';
export { truncateMiddle, truncateHead } from './tools/truncation.js';

// @section command-output
export type { BoundedHealthCheckOptions } from './contract/bounded-health-check.js';
export { DEFAULT_COMMAND_TIMEOUT_SECONDS } from './command/command-output.js';
export type { CommandOutcome } from './command/command-output.js';
export { sliceLines } from './paths/line-range.js';
export { withDeadline } from './async/with-deadline.js';
export type { DeadlineOptions, DeadlineOutcome } from './async/with-deadline.js';

// @section observability
export * from './logging/logger.js';
export { fromPino } from './observability/observability-pino.js';
export type { PinoLike, PinoLogFn } from './observability/observability-pino.js';
export { hasProviderEvents, hasSandboxCounts } from './contract/provider-events.js';
export type {
  AcquirePath,
  OwnershipErrorEvent,
  SandboxAcquiredEvent,
  SandboxAdoptedEvent,
  SandboxCounts,
  SandboxProviderCounts,
  SandboxProviderEvent,
  SandboxProviderEventListener,
  SandboxProviderEvents,
  SandboxReapedEvent,
} from './contract/provider-events.js';
export { instrumentProvider } from './observability/observability.js';
export type { InstrumentProviderOptions } from './observability/observability.js';

export type {
  TelemetryAttributeValue,
  TelemetryAttributes,
  TelemetryCounter,
  TelemetryHistogram,
  TelemetryMeter,
  TelemetryMetricOptions,
  TelemetryObservableCallback,
  TelemetryObservableGauge,
  TelemetryObservableResult,
  TelemetrySpan,
  TelemetryTracer,
} from './observability/observability-otel.js';
export { SandboxSpecError, networkPolicyEnforced } from './contract/sandbox-spec.js';
export type {
  EgressAttachment,
  EgressGateway,
  EgressGatewayRequest,
} from './contract/egress-gateway.js';
export {
  MAX_NETWORK_CREDENTIALS,
  MAX_NETWORK_RULES,
  NETWORK_MODES,
  NetworkPolicyUnenforceableError,
  NetworkPolicyWideningError,
  OPEN_NETWORK_POLICY,
  canonicalNetworkPolicy,
  hostPatternMatches,
  hostRuleMatches,
  narrowNetworkPolicy,
  networkPolicyRestricts,
  networkVerdict,
  parseHostRule,
  parseNetworkPolicy,
} from './contract/network-policy.js';
export type {
  NetworkCredential,
  NetworkHostRule,
  NetworkMode,
  NetworkPolicy,
  NetworkPolicyInput,
  NetworkSecretSource,
} from './contract/network-policy.js';
export {
  DEFAULT_SPEC_MAXIMA,
  MIN_SPEC_CPUS,
  SPEC_CEILINGS,
} from './contract/sandbox-spec-bounds.js';
export type { SpecMaxima } from './contract/sandbox-spec-bounds.js';
export type {
  SandboxResourceName,
  SandboxResources,
  SandboxSpec,
  NetworkPolicySupport,
  SandboxSpecPolicy,
  SandboxSpecSupport,
} from './contract/sandbox-spec.js';
