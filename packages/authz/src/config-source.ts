import type { AuthorizationConfig } from './authorization-config.js';

type MaybePromise<T> = T | Promise<T>;

/**
 * Where an enforcement layer reads the authorization config. A function is called on every
 * decision, so a hot-reloaded config applies to the next call. `undefined`/`null` means "no
 * config": enforcement is off. A function that throws is an enforcement error handled as
 * fail-closed (the `fail_closed` setting itself is unknown then, and its default is true).
 */
export type AuthorizationConfigSource =
  | AuthorizationConfig
  | null
  | undefined
  | (() => MaybePromise<AuthorizationConfig | null | undefined>);

export async function readAuthorizationConfig(
  source: AuthorizationConfigSource,
): Promise<AuthorizationConfig | null | undefined> {
  return typeof source === 'function' ? source() : source;
}
