// Public API of @sbx/authz.

// --- principal
export { buildPrincipal, withDefaultRole, effectiveRole } from './principal.js';
export type { Principal, PrincipalContext, BuildPrincipalOptions } from './principal.js';

// --- provider protocol
export { isAuthorizationProvider, isAuthorizationDecision } from './authorization-provider.js';
export type {
  AuthorizationProvider,
  AuthorizationDecision,
  AuthorizationReason,
  AuthorizeOptions,
} from './authorization-provider.js';

// --- configuration
export {
  authorizationConfigSchema,
  parseAuthorizationConfig,
  parseAuthorizationConfigYaml,
  authorizationConfigFromDocument,
  DEFAULT_AUTHORIZATION_CONFIG,
} from './authorization-config.js';
export type { AuthorizationConfig, AuthorizationProviderConfig } from './authorization-config.js';
export type { AuthorizationConfigSource } from './config-source.js';

// --- provider loading
export {
  resolveAuthorizationProvider,
  resolveAuthorizationProviderSpec,
  constructAuthorizationProvider,
  BUILTIN_RBAC_PROVIDER_USE,
} from './provider-loader.js';
export type {
  ModuleImporter,
  AuthorizationProviderClass,
  AuthorizationProviderSpec,
  ResolveProviderOptions,
} from './provider-loader.js';

// --- RBAC
export { RbacAuthorizationProvider, RBAC_RESOURCE_KEYS } from './rbac-provider.js';
export type { RbacProviderConfig, RbacPolicy, RbacAllow } from './rbac-provider.js';

// --- sandbox:execute gate
export {
  authorizeSandboxExecution,
  withSandboxAuthorizationScope,
  SANDBOX_RESOURCE,
  SANDBOX_EXECUTE_ACTION,
  SANDBOX_TARGET,
} from './sandbox-gate.js';
export type { SandboxGateOptions, SandboxGateOutcome } from './sandbox-gate.js';
export { createSandboxAuthorizer } from './sandbox-authorizer.js';
export type { SandboxAuthorizerOptions } from './sandbox-authorizer.js';
export { eagerAcquireWithAuthorization } from './eager-acquire.js';
export type { EagerAcquireOptions } from './eager-acquire.js';

// --- gateway requests
export { tryAcquireSandboxForRequest, GATEWAY_SYNC_LEASES } from './gateway.js';
export type { GatewaySyncKind, TryAcquireSandboxForRequestOptions } from './gateway.js';

// --- tool filter
export { filterToolsForPrincipal, TOOL_RESOURCE, TOOL_CALL_ACTION } from './tool-filter.js';
export type { NamedTool, ToolFilterOptions } from './tool-filter.js';
