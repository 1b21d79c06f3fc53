// Public API of @sbx/core. Each block belongs to one concept; keep exports explicit.

// --- errors
export * from './errors.js';

// --- optional dependencies
export { loadOptionalDependency, interopDefault } from './optional-dependency.js';

// --- contract
export { Sandbox } from './sandbox.js';
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
} from './sandbox.js';
export { SandboxProvider } from './sandbox-provider.js';
export type {
  AcquireOptions,
  AgentSkillPolicy,
  SkillProjectionCategory,
  SyncAgentSkillsOptions,
} from './sandbox-provider.js';

// @section config
export { OVERFLOW_POLICIES, OWNERSHIP_TYPES, PROVIDER_BLOCK_KEYS } from './config.js';
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
} from './config.js';
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
} from './config-schema.js';
export type { SandboxConfigInput, SandboxSchemaContext } from './config-schema.js';
export {
  REFERENCE_FLAT_PROVIDER_KEYS,
  providerBlockFor,
  translateReferenceUse,
} from './config-input.js';
export { loadSandboxConfig, parseSandboxConfig, parseSandboxConfigYaml } from './config-loader.js';
export {
  PROVIDER_BLOCK_PACKAGES,
  closestKey,
  collectConfigIssues,
  unknownKeyIssues,
} from './config-block.js';
export type { ConfigBlockValidator } from './config-block.js';
export type { ParseSandboxConfigOptions, SandboxConfigSource } from './config-loader.js';
export {
  DEFAULT_OWNERSHIP_REDIS_URL,
  REFERENCE_OWNERSHIP_REDIS_URL_ENV,
  REFERENCE_STREAM_BRIDGE_REDIS_URL_ENV,
  SBX_OWNERSHIP_REDIS_URL_ENV,
  resolveOwnershipConfig,
} from './config-ownership.js';
export type {
  OwnershipSource,
  ResolveOwnershipOptions,
  ResolvedOwnershipConfig,
} from './config-ownership.js';
export { listSandboxConfigKeys, sandboxConfigJsonSchema } from './config-reference.js';
export type { ConfigKeyInfo } from './config-reference.js';

// @section identity
export {
  assertSameThreadIdentity,
  describeThreadIdentity,
  sameThreadIdentity,
} from './thread-identity.js';
export type { ThreadIdentity } from './thread-identity.js';
export {
  DEFAULT_USER_ID,
  SandboxScopeKinds,
  deriveSandboxScopeToken,
  identityScopesFor,
  isValidSandboxId,
  resolveEffectiveUserId,
  sandboxScopeTokenKind,
} from './identity.js';
export type { SandboxScope, SandboxScopeTokenInput } from './identity.js';

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
} from './provisioner-contract.js';
export type { ProvisionerMount } from './provisioner-contract.js';

// @section provider-loading
export {
  DEFAULT_PROVIDER_SPECIFIER,
  parseProviderSpecifier,
  providerSpecifierProblem,
} from './provider-specifier.js';
export type { ProviderSpecifier } from './provider-specifier.js';
export { PROVIDER_FACTORY_EXPORT, loadProviderClass } from './provider-loader.js';
export { isModuleNotFoundFor } from './optional-dependency.js';
export type {
  LoadProviderOptions,
  LoadedProvider,
  ModuleImporter,
  SandboxProviderClass,
  SandboxProviderFactory,
  SandboxProviderInit,
} from './provider-loader.js';
export {
  SBX_CONFIG_PATH_ENV,
  getInstalledSandboxProvider,
  getSandboxProvider,
  onProviderDetached,
  resetSandboxProvider,
  setSandboxProvider,
  shutdownSandboxProvider,
} from './default-provider.js';
export type {
  DefaultProviderLifecycleOptions,
  GetSandboxProviderOptions,
  ProviderDetachReason,
  ProviderDetachedListener,
} from './default-provider.js';

export { canListSandboxes, canReapOrphans } from './sandbox-inspection.js';
export type {
  ListSandboxesOptions,
  OrphanCollectingProvider,
  OrphanReapReport,
  ReapOrphansOptions,
  SandboxListingProvider,
  SandboxSummary,
} from './sandbox-inspection.js';

// @section acquire-serializer
export { throwIfAborted } from './throw-if-aborted.js';
export { sleep } from './sleep.js';
export type { SleepOptions } from './sleep.js';
export { ResettableAcquireSerializer } from './resettable-acquire-serializer.js';
export type { ResettableAcquireSerializerOptions } from './resettable-acquire-serializer.js';
export {
  AcquireSerializer,
  DEFAULT_SERIALIZER_LIMIT,
  serializerKey,
} from './acquire-serializer.js';
export type {
  AcquireSerializerOptions,
  SerializerKeyPart,
  SerializerLease,
  SerializerWaitOptions,
} from './acquire-serializer.js';

// @section lease-manager
export {
  SandboxLeaseManager,
  getSandboxLeaseManager,
  discardSandboxLeaseManager,
} from './lease-manager.js';
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
} from './lease-manager.js';
export {
  LEASE_OWNER_CONTEXT_KEY,
  COMMAND_SCOPE_CONTEXT_KEY,
  SERVER_OWNED_CONTEXT_KEYS,
  createLeaseOwnerId,
  scrubServerOwnedContext,
  sandboxLeaseOwner,
  sandboxCommandScope,
  ensureSandboxLeaseOwner,
} from './lease-context.js';
export type { ServerOwnedContextKey } from './lease-context.js';
export { acquireSandboxClientLease, runLifecycleOperation } from './lease-client.js';
export type {
  SandboxClientLease,
  SandboxClientLeaseOptions,
  LifecycleOperationOptions,
} from './lease-client.js';

// @section warm-pool
export { WarmPoolRegistry } from './warm-pool-registry.js';
export type { WarmPoolRegistryOptions, WarmPoolSettings } from './warm-pool-registry.js';
export {
  WarmPool,
  DEFAULT_IDLE_TIMEOUT_SECONDS,
  DEFAULT_IDLE_CHECK_INTERVAL_SECONDS,
  DEFAULT_REPLICAS,
} from './warm-pool.js';
export type {
  WarmEntry,
  WarmPoolOptions,
  WarmPoolDestroyReason,
  TeardownReservation,
  WarmPoolCapacityResult,
} from './warm-pool.js';
export { systemClock } from './clock.js';
export type { Clock, ClockTimer, ClockTimeoutOptions } from './clock.js';

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
} from './ownership-store.js';
export type {
  OwnershipStore,
  ClaimOptions,
  LeaseState,
  LeaseHolder,
  LeaseTimingConfig,
} from './ownership-store.js';
export { MemoryOwnershipStore, MemoryLeaseTable } from './memory-ownership-store.js';
export type { MemoryOwnershipStoreOptions } from './memory-ownership-store.js';
export {
  createOwnershipStore,
  loadOwnershipRedisModule,
  redisUrlOf,
  assertOwnershipType,
  OWNERSHIP_REDIS_PACKAGE,
} from './ownership-store-factory.js';
export type {
  OwnershipRedisModule,
  OwnershipStoreFactoryOptions,
  CreateOwnershipStoreOptions,
} from './ownership-store-factory.js';
export { TEARDOWN_JOIN_TIMEOUT_MS, withHeldTeardownLease } from './teardown-lease.js';
export type { HeldTeardownLeaseOptions } from './teardown-lease.js';

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
} from './capacity-store.js';
export type { CapacityStore, CapacityInventory, CapacityInventoryEntry } from './capacity-store.js';
export { MemoryCapacityStore, MemoryCapacityLedger } from './memory-capacity-store.js';
export type { MemoryCapacityStoreOptions } from './memory-capacity-store.js';
export { createCapacityStore } from './capacity-store-factory.js';
export type { CreateCapacityStoreOptions } from './capacity-store-factory.js';

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
} from './env-policy.js';
export type { BuildSandboxEnvOptions, EnvPolicyMode } from './env-policy.js';

// @section search
export { IGNORE_PATTERNS, shouldIgnoreName, shouldIgnorePath } from './search-ignore.js';
export type { IgnoreOptions } from './search-ignore.js';
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
} from './search-limits.js';
export { SearchWorkerPool, matchingLineIndices } from './search-worker-pool.js';
export type { LineTestOptions, SearchWorkerPoolOptions } from './search-worker-pool.js';
export { requiredLiteral } from './grep-literal.js';
export { compareNames, compareRelativePaths } from './search-order.js';
export {
  MAX_GLOB_ALTERNATIVES,
  MAX_GLOB_PATTERN_LENGTH,
  compileGlob,
  globNameFilter,
  pathMatchesGlob,
} from './glob-match.js';
export type { GlobMatcher, GlobMatchOptions } from './glob-match.js';
export { truncateLine } from './grep-line-summary.js';
export { compileGrepPattern, escapeRegex, translatePythonRegex } from './grep-pattern.js';
export type { GrepPatternOptions, TranslatedRegex } from './grep-pattern.js';
export { regexToPosixEre } from './grep-ere.js';
export type { LocalSearchOptions } from './search-walk.js';
export { findGlobMatches } from './glob-find.js';
export type { FindGlobOptions } from './glob-find.js';
export { findGrepMatches } from './grep-find.js';
export type { FindGrepOptions } from './grep-find.js';
export { listDirTree } from './list-dir.js';
export type { ListDirTreeOptions } from './list-dir.js';
export { shellQuote } from './shell-quote.js';
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
} from './search-remote.js';
export type {
  RemoteGlobOptions,
  RemoteGrepOptions,
  RemoteListDirOptions,
  RemoteParseOptions,
  RemoteSearchPlan,
} from './search-remote.js';

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
} from './virtual-paths.js';
export type { SkillCategory, UserDataSubdir, ThreadDataPaths } from './virtual-paths.js';
export {
  assertSafePathSegment,
  userDir,
  threadLayout,
  sharedSkillsViewPath,
} from './virtual-paths-layout.js';
export type { ThreadLayout } from './virtual-paths-layout.js';
export {
  threadVirtualToHostMappings,
  threadHostToVirtualMappings,
  replaceVirtualPath,
  replaceVirtualPathsInCommand,
} from './virtual-paths-thread.js';
export type { ThreadPathCorrespondence } from './virtual-paths-thread.js';
export {
  PathMappingTable,
  pathMapping,
  PATH_TRAVERSAL_MESSAGE,
  PATH_ESCAPES_MOUNT_MESSAGE,
  READ_ONLY_FILE_SYSTEM_MESSAGE,
  OUTSIDE_MOUNTS_MESSAGE,
} from './path-mapping.js';
export { MAX_PATH_BYTES, assertPathArgument, shownPath } from './path-limits.js';
export {
  ESCAPED_CONFINEMENT_MESSAGE,
  ensureDirectoryConfined,
  openConfined,
  openedRealPath,
} from './host-confinement.js';
export type { ConfinedOpenOptions } from './host-confinement.js';
export type { PathMappingTableOptions } from './path-mapping.js';
export type { PathMapping, ResolvedPath, PathAccess } from './path-mapping.js';
export { realpathLenient, isInsideRoot } from './path-mapping-realpath.js';
export { findContainerPaths, translateContainerPaths } from './path-mapping-translate.js';
export type { TranslationMode, ContainerPathOccurrence } from './path-mapping-translate.js';
export {
  buildOutputMaskPattern,
  scanPathOccurrences,
  HostPathMasker,
  resolveHostRoot,
  resolvedRootCacheSize,
  maskLocalPathsInOutput,
} from './path-masking.js';
export type { MaskSource, MaskOptions, LocalMaskOptions } from './path-masking.js';
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
} from './path-validation.js';
export type { VirtualRootsOptions, LocalToolPathOptions } from './path-validation.js';
export { validateLocalBashCommandPaths, mcpFilesystemRoots } from './bash-path-guard.js';
export type { BashPathGuardOptions, McpServerArgs } from './bash-path-guard.js';
export {
  LOCAL_HOST_BASH_DISABLED_MESSAGE,
  LOCAL_BASH_SUBAGENT_DISABLED_MESSAGE,
  isLocalProviderSpecifier,
  usesLocalSandboxProvider,
  allowsHostBash,
} from './host-bash.js';
export type { HostBashConfig } from './host-bash.js';

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
export { boundedHealthCheck } from './bounded-health-check.js';
export type { BoundedHealthCheckOptions } from './bounded-health-check.js';
export {
  assertDownloadablePath,
  assertSandboxFilePath,
  decodeFileText,
} from './sandbox-file-checks.js';
export {
  DEFAULT_COMMAND_TIMEOUT_SECONDS,
  assembleCommandOutput,
  formatSeconds,
  timeoutNotice,
} from './command-output.js';
export type { CommandOutcome } from './command-output.js';
export { sliceLines } from './line-range.js';
export { withDeadline } from './with-deadline.js';
export type { DeadlineOptions, DeadlineOutcome } from './with-deadline.js';

// @section observability
export * from './logger.js';
export { fromPino } from './observability-pino.js';
export type { PinoLike, PinoLogFn } from './observability-pino.js';
export {
  ACQUIRE_PATHS,
  SandboxProviderEventEmitter,
  hasProviderEvents,
  hasSandboxCounts,
} from './observability-events.js';
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
} from './observability-events.js';
export {
  METRIC_NAMES,
  SPAN_NAMES,
  UNKNOWN_ACQUIRE_PATH,
  instrumentProvider,
} from './observability.js';
export type { InstrumentProviderOptions } from './observability.js';
export { TELEMETRY_SCOPE } from './observability-otel.js';
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
} from './observability-otel.js';
export {
  DEFAULT_SPEC_POLICY,
  NO_SPEC_SUPPORT,
  SandboxSpecError,
  checkSandboxSpec,
  specIdentityScope,
} from './sandbox-spec.js';
export type {
  SandboxResourceName,
  SandboxResources,
  SandboxSpec,
  SandboxSpecPolicy,
  SandboxSpecSupport,
} from './sandbox-spec.js';
