/**
 * How the commands of `@sbx/local` run (`sandbox.local.isolation`):
 *
 * - `bwrap`: every command runs confined in its thread's namespaces (bubblewrap); a host where
 *   bubblewrap cannot start refuses to build the provider (`ConfinementUnavailableError`).
 * - `none`: commands run on the host as the gateway's user, only with `allowHostBash` (the
 *   behaviour before confinement existed).
 * - `auto` (the default): `bwrap` where bubblewrap works here; elsewhere bash stays off (one log
 *   line says why) unless `allowHostBash` asks for unconfined host bash explicitly.
 */
export type IsolationMode = 'auto' | 'bwrap' | 'none';

export const ISOLATION_MODES: readonly IsolationMode[] = ['auto', 'bwrap', 'none'];

export const DEFAULT_ISOLATION_MODE: IsolationMode = 'auto';

export function isIsolationMode(value: unknown): value is IsolationMode {
  return typeof value === 'string' && (ISOLATION_MODES as readonly string[]).includes(value);
}

/** What a provider decided at construction: how its commands run, and why. */
export type CommandMode =
  | { readonly kind: 'confined' }
  | { readonly kind: 'host' }
  | { readonly kind: 'off'; readonly reason: string };
