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

// @section tools

// @section observability
export * from './logger.js';
