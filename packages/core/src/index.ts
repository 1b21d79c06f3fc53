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

// @section provider-loading

// @section acquire-serializer

// @section lease-manager

// @section warm-pool

// @section ownership-store

// @section capacity-store

// @section env-policy

// @section search

// @section virtual-paths

// @section tools

// @section observability
export * from './logger.js';
