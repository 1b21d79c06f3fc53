// Public API of @sbx/core. Each block belongs to one concept; keep exports explicit.

// --- errors
export * from './errors/errors.js';

// --- optional dependencies
export { loadOptionalDependency, interopDefault } from './provider-kit/optional-dependency.js';

// --- contract
export { Sandbox } from './contract/sandbox.js';
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
  SyncAgentSkillsOptions,
} from './contract/sandbox-provider.js';

// @section config
export { OVERFLOW_POLICIES, OWNERSHIP_TYPES, PROVIDER_BLOCK_KEYS } from './config/config.js';
export type {
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
export {
  DEFAULT_BASE_DIR,
  DEFAULT_OWNERSHIP_KEY_PREFIX,
  DEFAULT_SKILLS_ROOT,
  RESERVED_CONTAINER_PATHS,
  HOST_SYSTEM_TREES,
  MAX_TIMER_SECONDS,
  hostDataDirProblem,
  createSandboxConfigSchema,
  sandboxConfigSchema,
  sandboxSectionInputSchema,
} from './config/config-schema.js';
export type { SandboxConfigInput, SandboxSchemaContext } from './config/config-schema.js';
export {
  REFERENCE_FLAT_PROVIDER_KEYS,
  providerBlockFor,
  translateReferenceUse,
} from './config/config-input.js';
export {
  loadSandboxConfig,
  parseSandboxConfig,
  parseSandboxConfigYaml,
} from './config/config-loader.js';
export {
  PROVIDER_BLOCK_PACKAGES,
  closestKey,
  collectConfigIssues,
  unknownKeyIssues,
} from './config/config-block.js';
export type { ConfigBlockValidator } from './config/config-block.js';
export type { ParseSandboxConfigOptions, SandboxConfigSource } from './config/config-loader.js';
export {
  DEFAULT_OWNERSHIP_REDIS_URL,
  REFERENCE_OWNERSHIP_REDIS_URL_ENV,
  REFERENCE_STREAM_BRIDGE_REDIS_URL_ENV,
  SBX_OWNERSHIP_REDIS_URL_ENV,
  resolveOwnershipConfig,
} from './config/config-ownership.js';
export type {
  OwnershipSource,
  ResolveOwnershipOptions,
  ResolvedOwnershipConfig,
} from './config/config-ownership.js';
export { listSandboxConfigKeys, sandboxConfigJsonSchema } from './config/config-reference.js';
export type { ConfigKeyInfo } from './config/config-reference.js';

// @section identity
export {
  assertSameThreadIdentity,
  describeThreadIdentity,
  sameThreadIdentity,
} from './identity/thread-identity.js';
export type { ThreadIdentity } from './identity/thread-identity.js';
export {
  DEFAULT_USER_ID,
  SandboxScopeKinds,
  deriveSandboxScopeToken,
  identityScopesFor,
  isValidSandboxId,
  resolveEffectiveUserId,
  sandboxScopeTokenKind,
} from './identity/identity.js';
export type { SandboxScope, SandboxScopeTokenInput } from './identity/identity.js';

// @section provisioner-contract
export {
  ACP_WORKSPACE_MOUNT_PATH,
  LARK_CLI_CONFIG_MOUNT_PATH,
  LARK_CLI_DATA_MOUNT_PATH,
  LARK_CLI_LOCKS_MOUNT_PATH,
  LARK_CLI_RUNTIME_MOUNT_PATH,
  PROVISIONER_MAX_EXTRA_MOUNTS,
  PROVISIONER_THREAD_ID_PATTERN,
  PROVISIONER_USER_ID_PATTERN,
  SKILL_MOUNT_CATEGORIES,
  canonicalSkillsRoot,
  provisionerExtraMountPaths,
  skillCategoryMountPaths,
} from './contract/provisioner-contract.js';
export type { ProvisionerMount } from './contract/provisioner-contract.js';

// @section provider-loading
export {
  DEFAULT_PROVIDER_SPECIFIER,
  parseProviderSpecifier,
  providerSpecifierProblem,
} from './provider-kit/provider-specifier.js';
export type { ProviderSpecifier } from './provider-kit/provider-specifier.js';
export { PROVIDER_FACTORY_EXPORT, loadProviderClass } from './provider-kit/provider-loader.js';
export { isModuleNotFoundFor } from './provider-kit/optional-dependency.js';
export type {
  LoadProviderOptions,
  LoadedProvider,
  ModuleImporter,
  SandboxProviderClass,
  SandboxProviderFactory,
  SandboxProviderInit,
} from './provider-kit/provider-loader.js';
export {
  SBX_CONFIG_PATH_ENV,
  getInstalledSandboxProvider,
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
export { ResettableAcquireSerializer } from './serializer/resettable-acquire-serializer.js';
export type { ResettableAcquireSerializerOptions } from './serializer/resettable-acquire-serializer.js';
export {
  AcquireSerializer,
  DEFAULT_SERIALIZER_LIMIT,
  serializerKey,
} from './serializer/acquire-serializer.js';
export type {
  AcquireSerializerOptions,
  SerializerKeyPart,
  SerializerLease,
  SerializerWaitOptions,
} from './serializer/acquire-serializer.js';

// @section lease-manager
export {
  SandboxLeaseManager,
  getSandboxLeaseManager,
  discardSandboxLeaseManager,
} from './execution-leases/lease-manager.js';
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
} from './execution-leases/lease-manager.js';
export {
  LEASE_OWNER_CONTEXT_KEY,
  COMMAND_SCOPE_CONTEXT_KEY,
  SERVER_OWNED_CONTEXT_KEYS,
  createLeaseOwnerId,
  scrubServerOwnedContext,
  sandboxLeaseOwner,
  sandboxCommandScope,
  ensureSandboxLeaseOwner,
} from './execution-leases/lease-context.js';
export type { ServerOwnedContextKey } from './execution-leases/lease-context.js';
export {
  acquireSandboxClientLease,
  runLifecycleOperation,
} from './execution-leases/lease-client.js';
export type {
  SandboxClientLease,
  SandboxClientLeaseOptions,
  LifecycleOperationOptions,
} from './execution-leases/lease-client.js';

// @section warm-pool
export { WarmPoolRegistry } from './warm-pool/warm-pool-registry.js';
export type { WarmPoolRegistryOptions, WarmPoolSettings } from './warm-pool/warm-pool-registry.js';
export {
  WarmPool,
  DEFAULT_IDLE_TIMEOUT_SECONDS,
  DEFAULT_IDLE_CHECK_INTERVAL_SECONDS,
  DEFAULT_REPLICAS,
} from './warm-pool/warm-pool.js';
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
export {
  RenewOutcome,
  LeaseValue,
  leaseTtlSeconds,
  leaseTtlMilliseconds,
  createOwnerId,
  assertLeaseSandboxId,
  assertLeaseOwnerId,
  DEFAULT_RENEWAL_INTERVAL_SECONDS,
  DEFAULT_TTL_MULTIPLIER,
} from './ownership/ownership-store.js';
export type {
  OwnershipStore,
  ClaimOptions,
  LeaseState,
  LeaseHolder,
  LeaseTimingConfig,
} from './ownership/ownership-store.js';
export { MemoryOwnershipStore, MemoryLeaseTable } from './ownership/memory-ownership-store.js';
export type { MemoryOwnershipStoreOptions } from './ownership/memory-ownership-store.js';
export {
  createOwnershipStore,
  loadOwnershipRedisModule,
  redisUrlOf,
  assertOwnershipType,
  OWNERSHIP_REDIS_PACKAGE,
} from './ownership/ownership-store-factory.js';
export type {
  OwnershipRedisModule,
  OwnershipStoreFactoryOptions,
  CreateOwnershipStoreOptions,
} from './ownership/ownership-store-factory.js';
export { TEARDOWN_JOIN_TIMEOUT_MS, withHeldTeardownLease } from './ownership/teardown-lease.js';
export type { HeldTeardownLeaseOptions } from './ownership/teardown-lease.js';

// @section capacity-store
export {
  CapacityReserveOutcome,
  CAPACITY_META_STATE,
  CAPACITY_META_HARD_LIMIT,
  CAPACITY_META_REVISION,
  CAPACITY_META_FIELD_COUNT,
  CAPACITY_RESERVATION_PREFIX,
  CAPACITY_SANDBOX_PREFIX,
  CAPACITY_MISSING_PREFIX,
  capacityMismatchMessage,
  assertCapacityHardLimit,
  assertCapacityInventory,
  assertCapacityToken,
  assertCapacitySandboxId,
} from './capacity/capacity-store.js';
export type {
  CapacityStore,
  CapacityInventory,
  CapacityInventoryEntry,
} from './capacity/capacity-store.js';
export { MemoryCapacityStore, MemoryCapacityLedger } from './capacity/memory-capacity-store.js';
export type { MemoryCapacityStoreOptions } from './capacity/memory-capacity-store.js';
export { createCapacityStore } from './capacity/capacity-store-factory.js';
export type { CreateCapacityStoreOptions } from './capacity/capacity-store-factory.js';

// @section env-policy
export {
  BLOCKED_ENV_NAMES,
  MIN_REDACTED_VALUE_LENGTH,
  REDACTED_PLACEHOLDER,
  SECRET_ENV_NAME_MARKERS,
  buildSandboxEnv,
  isSecretEnvName,
  isSecretEnvValue,
  ALLOWED_ENV_NAMES,
  ENV_POLICY_MODES,
  redactSecrets,
  validateExtraEnv,
} from './config/env-policy.js';
export type { BuildSandboxEnvOptions, EnvPolicyMode } from './config/env-policy.js';

// @section search
export { IGNORE_PATTERNS, shouldIgnoreName, shouldIgnorePath } from './search/search-ignore.js';
export type { IgnoreOptions } from './search/search-ignore.js';
export {
  BINARY_SNIFF_BYTES,
  DEFAULT_GLOB_MAX_RESULTS,
  DEFAULT_GREP_MAX_RESULTS,
  DEFAULT_LIST_DIR_DEPTH,
  DEFAULT_MAX_FILE_SIZE_BYTES,
  LINE_SUMMARY_LENGTH,
  DEFAULT_SEARCH_TIMEOUT_MS,
  MAX_GREP_LINE_LENGTH,
  REMOTE_LIST_DIR_LIMIT,
} from './search/search-limits.js';
export { SearchWorkerPool, matchingLineIndices } from './search/search-worker-pool.js';
export type { LineTestOptions, SearchWorkerPoolOptions } from './search/search-worker-pool.js';
export { requiredLiteral } from './search/grep-literal.js';
export { compareNames, compareRelativePaths } from './search/search-order.js';
export {
  MAX_GLOB_ALTERNATIVES,
  MAX_GLOB_PATTERN_LENGTH,
  compileGlob,
  globNameFilter,
  pathMatchesGlob,
} from './search/glob-match.js';
export type { GlobMatcher, GlobMatchOptions } from './search/glob-match.js';
export { truncateLine } from './search/grep-line-summary.js';
export { compileGrepPattern, escapeRegex, translatePythonRegex } from './search/grep-pattern.js';
export type { GrepPatternOptions, TranslatedRegex } from './search/grep-pattern.js';
export { regexToPosixEre } from './search/grep-ere.js';
export type { LocalSearchOptions } from './search/search-walk.js';
export { findGlobMatches } from './search/glob-find.js';
export type { FindGlobOptions } from './search/glob-find.js';
export { findGrepMatches } from './search/grep-find.js';
export type { FindGrepOptions } from './search/grep-find.js';
export { listDirTree } from './paths/list-dir.js';
export type { ListDirTreeOptions } from './paths/list-dir.js';
export { shellQuote } from './host/shell-quote.js';
export {
  buildFindCommand,
  buildGrepCommand,
  buildListDirCommand,
  parseFindOutput,
  parseGrepOutput,
  parseListDirOutput,
  planRemoteGlob,
  planRemoteGrep,
  planRemoteListDir,
  remoteOutputLimit,
  remotePerFileLimit,
} from './search/search-remote.js';
export type {
  RemoteGlobOptions,
  RemoteGrepOptions,
  RemoteListDirOptions,
  RemoteParseOptions,
  RemoteSearchPlan,
} from './search/search-remote.js';

// @section virtual-paths
export {
  VIRTUAL_PATH_PREFIX,
  VIRTUAL_WORKSPACE_PATH,
  VIRTUAL_UPLOADS_PATH,
  VIRTUAL_OUTPUTS_PATH,
  VIRTUAL_ACP_WORKSPACE_PATH,
  DEFAULT_SKILLS_CONTAINER_PATH,
  SKILL_CATEGORIES,
  USER_DATA_SUBDIRS,
  isUnderVirtualPrefix,
  normalizeVirtualRoot,
  hasTraversalSegment,
} from './paths/virtual-paths.js';
export type { SkillCategory, UserDataSubdir, ThreadDataPaths } from './paths/virtual-paths.js';
export {
  assertSafePathSegment,
  userDir,
  threadLayout,
  sharedSkillsViewPath,
} from './paths/virtual-paths-layout.js';
export type { ThreadLayout } from './paths/virtual-paths-layout.js';
export {
  threadVirtualToHostMappings,
  threadHostToVirtualMappings,
  replaceVirtualPath,
  replaceVirtualPathsInCommand,
} from './paths/virtual-paths-thread.js';
export type { ThreadPathCorrespondence } from './paths/virtual-paths-thread.js';
export {
  PathMappingTable,
  pathMapping,
  PATH_TRAVERSAL_MESSAGE,
  PATH_ESCAPES_MOUNT_MESSAGE,
  READ_ONLY_FILE_SYSTEM_MESSAGE,
  OUTSIDE_MOUNTS_MESSAGE,
} from './paths/path-mapping.js';
export { MAX_PATH_BYTES, assertPathArgument, shownPath } from './paths/path-limits.js';
export {
  ESCAPED_CONFINEMENT_MESSAGE,
  ensureDirectoryConfined,
  openConfined,
  openedRealPath,
} from './host/host-confinement.js';
export type { ConfinedOpenOptions } from './host/host-confinement.js';
export type { PathMappingTableOptions } from './paths/path-mapping.js';
export type { PathMapping, ResolvedPath, PathAccess } from './paths/path-mapping.js';
export { realpathLenient, isInsideRoot } from './paths/path-mapping-realpath.js';
export { findContainerPaths, translateContainerPaths } from './paths/path-mapping-translate.js';
export type { TranslationMode, ContainerPathOccurrence } from './paths/path-mapping-translate.js';
export {
  buildOutputMaskPattern,
  scanPathOccurrences,
  HostPathMasker,
  resolveHostRoot,
  resolvedRootCacheSize,
  maskLocalPathsInOutput,
} from './paths/path-masking.js';
export type { MaskSource, MaskOptions, LocalMaskOptions } from './paths/path-masking.js';
export {
  THREAD_DATA_UNAVAILABLE_MESSAGE,
  NO_ALLOWED_DIRECTORIES_MESSAGE,
  isSkillsPath,
  isAcpWorkspacePath,
  customMountFor,
  rejectPathTraversal,
  validateLocalToolPath,
  resolveAndValidateUserDataPath,
  existingMounts,
} from './paths/path-validation.js';
export type { VirtualRootsOptions, LocalToolPathOptions } from './paths/path-validation.js';
export { validateLocalBashCommandPaths, mcpFilesystemRoots } from './host/bash-path-guard.js';
export type { BashPathGuardOptions, McpServerArgs } from './host/bash-path-guard.js';
export {
  LOCAL_HOST_BASH_DISABLED_MESSAGE,
  LOCAL_BASH_SUBAGENT_DISABLED_MESSAGE,
  isLocalProviderSpecifier,
  usesLocalSandboxProvider,
  allowsHostBash,
} from './host/host-bash.js';
export type { HostBashConfig } from './host/host-bash.js';

// @section tools
export { getToolDefinitions } from './tools/tool-definitions.js';
export type {
  ToolDefinition,
  ToolDefinitionOptions,
  JsonSchema,
} from './tools/tool-definitions.js';
export {
  TOOL_DESCRIPTIONS,
  BASH_TOOL_DESCRIPTION,
  LS_TOOL_DESCRIPTION,
  GLOB_TOOL_DESCRIPTION,
  GREP_TOOL_DESCRIPTION,
  READ_FILE_TOOL_DESCRIPTION,
  WRITE_FILE_TOOL_DESCRIPTION,
  STR_REPLACE_TOOL_DESCRIPTION,
} from './tools/tool-descriptions.js';
export {
  TOOL_INPUT_SCHEMAS,
  TOOL_NAMES,
  bashInputSchema,
  lsInputSchema,
  globInputSchema,
  grepInputSchema,
  readFileInputSchema,
  writeFileInputSchema,
  strReplaceInputSchema,
  isToolName,
  parseToolInput,
  MAX_COMMAND_BYTES,
  MAX_PATTERN_LENGTH,
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
} from './tools/tool-schemas.js';
export { runTool, runToolCall, TOOL_FUNCTIONS } from './tools/run-tool.js';
export { ToolErrorCode, toolFailure } from './tools/tool-result.js';
/** The message of anything thrown (`String(err)` for non-errors): the one helper for log fields. */
export { errorMessage } from './tools/tool-errors.js';
export type { ToolCallResult, ToolErrorCodeValue } from './tools/tool-result.js';
export { createToolRunner } from './tools/tool-runner.js';
export type { ToolCallOptions, ToolRunner, ToolRunnerOptions } from './tools/tool-runner.js';
export { describingToolSchema } from './tools/tool-standard-schema.js';
export type { RawToolArguments, StandardJsonSchemaV1 } from './tools/tool-standard-schema.js';
export { bashTool, withWorkspaceCwd } from './tools/bash-tool.js';
export { lsTool } from './tools/ls-tool.js';
export { globTool, formatGlobResult, GLOB_TRUNCATED_NOTICE } from './tools/glob-tool.js';
export { grepTool, formatGrepResult, GREP_TRUNCATED_NOTICE } from './tools/grep-tool.js';
export { readFileTool, binaryFileMessage } from './tools/read-file-tool.js';
export {
  writeFileTool,
  writeFileTooLargeMessage,
  WRITE_FILE_ERROR_MAX_CHARS,
} from './tools/write-file-tool.js';
export {
  strReplaceTool,
  stringNotFoundMessage,
  ambiguousStringMessage,
} from './tools/str-replace-tool.js';
export { createToolContext } from './tools/create-tool-context.js';
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
export {
  resolveToolConfig,
  toolConfigFromSandboxConfig,
  effectiveResultLimit,
  effectiveWriteFileMaxBytes,
  GLOB_RESULT_LIMIT,
  GREP_RESULT_LIMIT,
  DEFAULT_BASH_OUTPUT_MAX_CHARS,
  DEFAULT_READ_FILE_OUTPUT_MAX_CHARS,
  DEFAULT_LS_OUTPUT_MAX_CHARS,
  DEFAULT_BASH_COMMAND_TIMEOUT_SECONDS,
  DEFAULT_WRITE_FILE_MAX_BYTES,
  WRITE_FILE_MAX_BYTES_ENV,
} from './tools/tool-config.js';
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
export {
  checkReadBeforeWrite,
  recordFileContent,
  refreshFileMark,
  readBeforeWriteBlockedMessage,
  normalizeToolPath,
  toolSessionOf,
  sha256Hex,
} from './tools/read-before-write.js';
export type { ReadBeforeWriteCheck } from './tools/read-before-write.js';
export { FileOperationLock, fileOperationLock } from './tools/file-operation-lock.js';
export {
  isLocalSandbox,
  isLocalSandboxId,
  localToolEnvironment,
  maskHostPaths,
  guardFileToolPath,
  prepareLocalBashCommand,
} from './tools/local-sandbox-guard.js';
export type { LocalToolEnvironmentSource } from './tools/local-sandbox-guard.js';
export {
  truncateMiddle,
  truncateHead,
  truncateBashOutput,
  truncateReadFileOutput,
  truncateLsOutput,
  READ_FILE_TRUNCATION_HINT,
  LS_TRUNCATION_HINT,
} from './tools/truncation.js';

// @section command-output
export { boundedHealthCheck } from './contract/bounded-health-check.js';
export type { BoundedHealthCheckOptions } from './contract/bounded-health-check.js';
export {
  assertDownloadablePath,
  assertSandboxFilePath,
  decodeFileText,
} from './contract/sandbox-file-checks.js';
export {
  DEFAULT_COMMAND_TIMEOUT_SECONDS,
  assembleCommandOutput,
  formatSeconds,
  timeoutNotice,
} from './command/command-output.js';
export type { CommandOutcome } from './command/command-output.js';
export { sliceLines } from './paths/line-range.js';
export { withDeadline } from './async/with-deadline.js';
export type { DeadlineOptions, DeadlineOutcome } from './async/with-deadline.js';

// @section observability
export * from './observability/logger.js';
export { fromPino } from './observability/observability-pino.js';
export type { PinoLike, PinoLogFn } from './observability/observability-pino.js';
export {
  ACQUIRE_PATHS,
  SandboxProviderEventEmitter,
  hasProviderEvents,
  hasSandboxCounts,
} from './observability/observability-events.js';
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
} from './observability/observability-events.js';
export {
  METRIC_NAMES,
  SPAN_NAMES,
  UNKNOWN_ACQUIRE_PATH,
  instrumentProvider,
} from './observability/observability.js';
export type { InstrumentProviderOptions } from './observability/observability.js';
export { TELEMETRY_SCOPE } from './observability/observability-otel.js';
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
export {
  DEFAULT_SPEC_POLICY,
  NO_SPEC_SUPPORT,
  SandboxSpecError,
  checkSandboxSpec,
  specIdentityScope,
} from './contract/sandbox-spec.js';
export type {
  SandboxResourceName,
  SandboxResources,
  SandboxSpec,
  SandboxSpecPolicy,
  SandboxSpecSupport,
} from './contract/sandbox-spec.js';
