import { InvalidArgumentError, SbxError } from '../errors/errors.js';
import type { SandboxScope } from '../identity/identity.js';
import {
  NetworkPolicyUnenforceableError,
  OPEN_NETWORK_POLICY,
  canonicalNetworkPolicy,
  narrowNetworkPolicy,
  networkPolicyRestricts,
  parseNetworkPolicy,
  type NetworkPolicy,
  type NetworkPolicyInput,
} from './network-policy.js';
import { MIN_SPEC_CPUS, effectiveSpecMaxima } from './sandbox-spec-bounds.js';

/** Resources one acquire may ask for; each provider says which it can honour. */
export interface SandboxResources {
  readonly memoryMb?: number | undefined;
  readonly cpus?: number | undefined;
  readonly pids?: number | undefined;
  readonly diskGb?: number | undefined;
}

export type SandboxResourceName = keyof SandboxResources;

/**
 * What the host application asks of the sandbox of one acquire (per tenant, per plan). `image` and
 * `resources` are part of the sandbox's identity: a sandbox created with one is never reused for
 * another. `timeoutSeconds` and `labels` are not (they describe, not change, the sandbox): the
 * values of the acquire that created it stay.
 */
export interface SandboxSpec {
  /** An image (container) or template (VM); must be in the configured allowlist. */
  readonly image?: string | undefined;
  readonly resources?: SandboxResources | undefined;
  /** The sandbox's own lifetime limit (VM providers). */
  readonly timeoutSeconds?: number | undefined;
  /** Written to the container / VM metadata, e.g. `{ 'sbx.dev/tenant': 'acme' }`. */
  readonly labels?: Readonly<Record<string, string>> | undefined;
  /**
   * What this sandbox may reach, within `sandbox.network`: it may only narrow the configured policy
   * (`narrowNetworkPolicy`). Part of the identity: a sandbox of one policy is never reused for
   * another. Normalized by `checkSandboxSpec` to the effective (narrowed) policy.
   */
  readonly network?: NetworkPolicyInput | NetworkPolicy | undefined;
}

/** The capability flags of a provider: which spec fields it honours. Anything else is refused. */
export interface SandboxSpecSupport {
  readonly image: boolean;
  readonly resources: readonly SandboxResourceName[];
  readonly timeout: boolean;
  readonly labels: boolean;
  /**
   * The network policies the provider enforces (`spec.network`, `sandbox.network`): `true` every
   * one, a `NetworkPolicySupport` the kinds it names. Absent: none, and any policy but plain open
   * egress is refused at acquire with `NetworkPolicyUnenforceableError`.
   */
  readonly network?: boolean | NetworkPolicySupport | undefined;
}

/** Which restricting policies a provider enforces, when it cannot enforce every one. */
export interface NetworkPolicySupport {
  /** Mode `none`: no egress at all (a network namespace with loopback only). */
  readonly none: boolean;
  /** Mode `allowlist`, and deny rules in mode `open`: egress filtered by host (an egress proxy). */
  readonly filtered: boolean;
  /** `credentials` brokered into the configured headers. */
  readonly credentials: boolean;
}

/** Whether `support` (a provider's `specSupport.network`) enforces `policy`. */
export function networkPolicyEnforced(
  support: SandboxSpecSupport['network'],
  policy: NetworkPolicy,
): boolean {
  if (!networkPolicyRestricts(policy) || support === true) return true;
  if (support === undefined || support === false) return false;
  if (policy.credentials.length > 0 && !support.credentials) return false;
  if (policy.mode === 'none') return support.none;
  return policy.mode === 'allowlist' || policy.deny.length > 0 ? support.filtered : true;
}

export const NO_SPEC_SUPPORT: SandboxSpecSupport = {
  image: false,
  resources: [],
  timeout: false,
  labels: false,
};

/**
 * The operator's bounds on what an acquire may ask (`sandbox.spec` in the configuration). An absent
 * `max*` is not "unbounded": it is the hardened default of `sandbox-spec-bounds.ts`, so a spec can
 * only narrow the sandbox an unconfigured deployment hands out.
 */
export interface SandboxSpecPolicy {
  /** Images an acquire may name; empty: none (the configured default image only). */
  readonly images: readonly string[];
  readonly maxMemoryMb?: number | undefined;
  readonly maxCpus?: number | undefined;
  readonly maxPids?: number | undefined;
  readonly maxDiskGb?: number | undefined;
  readonly maxTimeoutSeconds?: number | undefined;
  /** The configured network policy (`sandbox.network`); absent: open egress. */
  readonly network?: NetworkPolicy | undefined;
}

export const DEFAULT_SPEC_POLICY: SandboxSpecPolicy = { images: [] };

/**
 * A spec this provider cannot honour, or one outside the operator's bounds. Refused, never
 * silently dropped: a tenant asking for 16 GiB must not quietly get the default.
 */
export class SandboxSpecError extends SbxError {
  static override readonly CODE = 'SANDBOX_SPEC';
  constructor(message: string) {
    super(message);
  }
}

const LABEL_KEY = /^[a-z0-9]([a-z0-9._/-]{0,61}[a-z0-9])?$/;
const MAX_LABELS = 32;
const MAX_LABEL_VALUE = 256;

function positive(name: string, value: unknown, integer: boolean): number {
  if (
    typeof value !== 'number' ||
    !Number.isFinite(value) ||
    value <= 0 ||
    (integer && !Number.isInteger(value))
  ) {
    throw new InvalidArgumentError(
      `spec.${name} must be a positive ${integer ? 'integer' : 'number'}`,
    );
  }
  return value;
}

function bounded(name: string, value: number, max: number, configured: boolean): void {
  if (value > max) {
    throw new SandboxSpecError(
      configured
        ? `spec.${name} ${value} is over the configured maximum ${max}`
        : `spec.${name} ${value} is over the default maximum ${max} (the hardened limit; set sandbox.spec.max_* to allow more)`,
    );
  }
}

const has = (configured: number | undefined): boolean => configured !== undefined;

const isPlainObject = (value: unknown): value is object =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Checks one acquire's spec against what the provider honours and the operator allows, and
 * returns it normalized (empty parts dropped); `undefined` for no spec at all.
 *
 * @throws SandboxSpecError for a field the provider cannot honour, an image not in the allowlist
 *   or a value over its bound (the configured `max_*`, else the hardened default); InvalidArgumentError
 *   for a malformed value (not a positive finite number, a fractional count);
 *   NetworkPolicyWideningError for a `network` wider than `sandbox.network`;
 *   NetworkPolicyUnenforceableError for a restricting network policy (configured or asked for)
 *   that `support.network` does not cover (`networkPolicyEnforced`), also when no spec is given
 */
export function checkSandboxSpec(
  spec: SandboxSpec | undefined,
  support: SandboxSpecSupport,
  policy: SandboxSpecPolicy,
  provider: string,
): SandboxSpec | undefined {
  const configuredNetwork = policy.network ?? OPEN_NETWORK_POLICY;
  if (spec === undefined || spec === null) {
    // The configured policy binds every acquire, with or without a spec.
    if (!networkPolicyEnforced(support.network, configuredNetwork)) {
      throw new NetworkPolicyUnenforceableError(provider, configuredNetwork.mode);
    }
    // A restricting configured policy is part of what the sandbox is: carried in the checked spec
    // so the identity names it, and a sandbox made under an earlier configuration (say, open) is
    // never reused once the configuration restricts it.
    return networkPolicyRestricts(configuredNetwork) ? { network: configuredNetwork } : undefined;
  }
  if (typeof spec !== 'object') throw new InvalidArgumentError('spec must be an object');
  const requestedNetwork =
    spec.network === undefined ? undefined : parseNetworkPolicy(spec.network, 'spec.network');
  const network = narrowNetworkPolicy(configuredNetwork, requestedNetwork);
  if (!networkPolicyEnforced(support.network, network)) {
    throw new NetworkPolicyUnenforceableError(provider, network.mode);
  }
  const refuse = (what: string) =>
    new SandboxSpecError(`${provider} cannot honour ${what}; leave it out or use another provider`);
  const out: { -readonly [K in keyof SandboxSpec]: SandboxSpec[K] } = {};
  // Every numeric field has a bound, configured or not (see `sandbox-spec-bounds.ts`).
  const max = effectiveSpecMaxima(policy);
  if (spec.image !== undefined) {
    if (!support.image) throw refuse('spec.image');
    if (typeof spec.image !== 'string' || spec.image === '') {
      throw new InvalidArgumentError('spec.image must be a non-empty string');
    }
    if (!policy.images.includes(spec.image)) {
      throw new SandboxSpecError(
        `spec.image ${JSON.stringify(spec.image)} is not in sandbox.spec.images`,
      );
    }
    out.image = spec.image;
  }
  if (spec.resources !== undefined) {
    if (!isPlainObject(spec.resources)) {
      throw new InvalidArgumentError('spec.resources must be an object');
    }
    const resources: { -readonly [K in SandboxResourceName]?: number } = {};
    for (const [name, value] of Object.entries(spec.resources)) {
      if (value === undefined) continue;
      if (!['memoryMb', 'cpus', 'pids', 'diskGb'].includes(name)) {
        throw new InvalidArgumentError(`spec.resources.${name} is not a resource`);
      }
      const key = name as SandboxResourceName;
      if (!support.resources.includes(key)) throw refuse(`spec.resources.${key}`);
      resources[key] = positive(`resources.${key}`, value, key !== 'cpus');
    }
    if (resources.cpus !== undefined && resources.cpus < MIN_SPEC_CPUS) {
      throw new SandboxSpecError(
        `spec.resources.cpus ${resources.cpus} is under the smallest share ${MIN_SPEC_CPUS}`,
      );
    }
    bounded('resources.memoryMb', resources.memoryMb ?? 0, max.memoryMb, has(policy.maxMemoryMb));
    bounded('resources.cpus', resources.cpus ?? 0, max.cpus, has(policy.maxCpus));
    bounded('resources.pids', resources.pids ?? 0, max.pids, has(policy.maxPids));
    bounded('resources.diskGb', resources.diskGb ?? 0, max.diskGb, has(policy.maxDiskGb));
    if (Object.keys(resources).length > 0) out.resources = resources;
  }
  if (spec.timeoutSeconds !== undefined) {
    if (!support.timeout) throw refuse('spec.timeoutSeconds');
    out.timeoutSeconds = positive('timeoutSeconds', spec.timeoutSeconds, false);
    bounded(
      'timeoutSeconds',
      out.timeoutSeconds,
      max.timeoutSeconds,
      has(policy.maxTimeoutSeconds),
    );
  }
  if (spec.labels !== undefined) {
    if (!support.labels) throw refuse('spec.labels');
    if (!isPlainObject(spec.labels))
      throw new InvalidArgumentError('spec.labels must be an object');
    const entries = Object.entries(spec.labels);
    if (entries.length > MAX_LABELS) {
      throw new InvalidArgumentError(`spec.labels: at most ${MAX_LABELS} labels`);
    }
    for (const [key, value] of entries) {
      if (!LABEL_KEY.test(key)) {
        throw new InvalidArgumentError(
          `spec.labels: ${JSON.stringify(key)} is not a label key (lower-case letters, digits, . _ / -)`,
        );
      }
      // sbx's own labels name the sandbox; a label must not impersonate them.
      if (key.startsWith('sbx.') && !key.startsWith('sbx.dev/')) {
        throw new InvalidArgumentError(`spec.labels: ${key} is reserved (use sbx.dev/...)`);
      }
      if (
        typeof value !== 'string' ||
        value.length > MAX_LABEL_VALUE ||
        [...value].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f)
      ) {
        throw new InvalidArgumentError(
          `spec.labels: the value of ${key} must be text of at most ${MAX_LABEL_VALUE} characters`,
        );
      }
    }
    if (entries.length > 0) out.labels = Object.fromEntries(entries);
  }
  if (requestedNetwork !== undefined || networkPolicyRestricts(network)) out.network = network;
  return Object.keys(out).length > 0 ? out : undefined;
}

/**
 * The identity scope of a spec: what changes what the sandbox is (image, resources, network).
 * Absent when the spec changes nothing, so a spec of labels only names the same sandbox as no spec.
 * The network policy is read as `checkSandboxSpec` normalized it (the effective policy), so two
 * spellings of one policy name one sandbox; a spec without network keeps the identity it had
 * before policies existed.
 */
export function specIdentityScope(spec: SandboxSpec | undefined): SandboxScope | undefined {
  if (
    !spec ||
    (spec.image === undefined && spec.resources === undefined && spec.network === undefined)
  ) {
    return undefined;
  }
  const resources = spec.resources ?? {};
  const parts: unknown[] = [
    spec.image ?? null,
    resources.memoryMb ?? null,
    resources.cpus ?? null,
    resources.pids ?? null,
    resources.diskGb ?? null,
  ];
  if (spec.network !== undefined) {
    parts.push(canonicalNetworkPolicy(parseNetworkPolicy(spec.network, 'spec.network')));
  }
  const canonical = JSON.stringify(parts);
  return { kind: 'sandbox-spec', value: canonical };
}
