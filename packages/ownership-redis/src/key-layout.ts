import { InvalidArgumentError } from '@sbx/core';

/** `'deerflow'`: the reference implementation's key names, so both can share one Redis. */
export type KeyCompat = 'deerflow';

export interface KeyLayoutOptions {
  /**
   * Namespace of every key. Default `sbx`, or `deerflow:sandbox:owner` with `compat: 'deerflow'`.
   * A trailing `:` is ignored.
   */
  keyPrefix?: string;
  compat?: KeyCompat;
}

export interface KeyLayout {
  /** The prefix after defaults and trailing-colon stripping. */
  readonly prefix: string;
  /** The string key holding one sandbox's lease. */
  leaseKey(sandboxId: string): string;
  /** The hash holding the deployment-wide capacity ledger. */
  readonly capacityKey: string;
}

export const DEFAULT_KEY_PREFIX = 'sbx';
export const DEERFLOW_KEY_PREFIX = 'deerflow:sandbox:owner';
const LEASE_NAMESPACE = 'sandbox:owner';

/**
 * Where the stores keep their data.
 *
 * sbx layout (default): leases at `<prefix>:sandbox:owner:<sandboxId>`, the ledger at
 * `<prefix>:e2b-capacity`. A prefix that already ends in `:sandbox:owner` is not extended again, so
 * `keyPrefix: 'deerflow:sandbox:owner'` gives exactly the reference's default keys.
 *
 * `compat: 'deerflow'`: the reference's rule verbatim — leases at `<prefix>:<sandboxId>`, the ledger
 * at `<prefix>:e2b-capacity`, default prefix `deerflow:sandbox:owner` — for deployments that share a
 * Redis with reference gateways configured with a custom `key_prefix`.
 */
export function keyLayout(options: KeyLayoutOptions = {}): KeyLayout {
  if (options.compat !== undefined && options.compat !== 'deerflow') {
    throw new InvalidArgumentError(
      `unknown key compat mode '${String(options.compat)}' (expected 'deerflow')`,
    );
  }
  const fallback = options.compat === 'deerflow' ? DEERFLOW_KEY_PREFIX : DEFAULT_KEY_PREFIX;
  const prefix = (options.keyPrefix ?? fallback).replace(/:+$/, '');
  if (prefix === '') {
    throw new InvalidArgumentError('keyPrefix must contain something besides ":"');
  }
  const leaseBase =
    options.compat === 'deerflow' ||
    prefix === LEASE_NAMESPACE ||
    prefix.endsWith(`:${LEASE_NAMESPACE}`)
      ? prefix
      : `${prefix}:${LEASE_NAMESPACE}`;
  return {
    prefix,
    leaseKey: (sandboxId) => `${leaseBase}:${sandboxId}`,
    capacityKey: `${prefix}:e2b-capacity`,
  };
}
