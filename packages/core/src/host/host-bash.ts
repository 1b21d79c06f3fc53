import { parseProviderSpecifier } from '../modules/provider-specifier.js';

const LOCAL_PACKAGE = '@sbx/local';

/**
 * Host bash on a host-backed provider runs commands as the server's own user with no isolation:
 * mount tables and path guards only steer well-behaved commands. It is therefore opt-in
 * (`sandbox.allowHostBash`), while container providers, whose shell is isolated, always allow it.
 */

export const LOCAL_HOST_BASH_DISABLED_MESSAGE =
  'Host bash execution is disabled for LocalSandboxProvider because it is not a secure sandbox boundary. ' +
  'Use the file tools, or switch to a container-based sandbox provider; to accept the risk on a ' +
  'trusted single-user machine, set sandbox.allow_host_bash: true.';

export const LOCAL_BASH_SUBAGENT_DISABLED_MESSAGE =
  'The bash subagent is unavailable because host bash execution is disabled for LocalSandboxProvider, ' +
  'which is not a secure sandbox boundary. Use a container-based sandbox provider, or set ' +
  'sandbox.allow_host_bash: true on a trusted single-user machine.';

/** The parts of a `sandbox` configuration section (`SandboxConfig`) the gate reads. */
export interface HostBashConfig {
  readonly use?: string;
  readonly allowHostBash?: boolean;
}

/**
 * `true` when `use` names the host-backed provider: the package `@sbx/local` with any export
 * (`@sbx/local`, `@sbx/local#LocalSandboxProvider`, a subpath of it). Reference class paths are
 * translated to `@sbx/local` by the configuration loader before they get here.
 */
export function isLocalProviderSpecifier(use: string): boolean {
  const parsed = parseProviderSpecifier(use.trim());
  if (parsed) return parsed.packageName === LOCAL_PACKAGE;
  // Unparsable text cannot be loaded anyway; still, never let it open the gate.
  return use.includes(LOCAL_PACKAGE) || use.includes('LocalSandboxProvider');
}

/** A section without `use` counts as local: the gate must fail closed, never open. */
export function usesLocalSandboxProvider(config: HostBashConfig): boolean {
  return typeof config.use !== 'string' || isLocalProviderSpecifier(config.use);
}

/**
 * Whether agents may run bash under this `sandbox` configuration section: no section → `false`; a
 * non-local provider → `true` (its shell is isolated); the local provider (or no `use`) →
 * `allowHostBash` (default `false`).
 */
export function allowsHostBash(config: HostBashConfig | null | undefined): boolean {
  if (!config) return false;
  if (!usesLocalSandboxProvider(config)) return true;
  return config.allowHostBash === true;
}
