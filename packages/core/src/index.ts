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

// @section identity
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

// @section provider-loading

// @section acquire-serializer

// @section lease-manager

// @section warm-pool

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
  resolveOwnershipStoreOptions,
  loadOwnershipRedisModule,
  SBX_OWNERSHIP_REDIS_URL_ENV,
  REFERENCE_OWNERSHIP_REDIS_URL_ENVS,
  DEFAULT_OWNERSHIP_REDIS_URL,
  OWNERSHIP_REDIS_PACKAGE,
} from './ownership-store-factory.js';
export type {
  OwnershipOptions,
  OwnershipStoreType,
  ResolvedOwnershipOptions,
  OwnershipEnv,
  OwnershipRedisModule,
  CreateOwnershipStoreOptions,
} from './ownership-store-factory.js';

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
export type {
  CapacityStore,
  CapacityInventory,
  CapacityInventoryEntry,
} from './capacity-store.js';
export { MemoryCapacityStore, MemoryCapacityLedger } from './memory-capacity-store.js';
export type { MemoryCapacityStoreOptions } from './memory-capacity-store.js';
export { createCapacityStore } from './capacity-store-factory.js';
export type { CreateCapacityStoreOptions } from './capacity-store-factory.js';

// @section env-policy

// @section search

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
} from './path-mapping.js';
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
  isHostBashAllowed,
} from './host-bash.js';
export type { HostBashConfig } from './host-bash.js';

// @section tools

// @section observability
export * from './logger.js';
