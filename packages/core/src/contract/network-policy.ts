import { InvalidArgumentError, SbxError } from '../errors/errors.js';

/**
 * What a sandbox may reach over the network. One policy for every provider: each provider either
 * enforces it (through the egress proxy, a network namespace, a NetworkPolicy, its SDK's rules) or
 * refuses a non-open policy at acquire; none ignores it.
 *
 * - `none`: no egress at all.
 * - `allowlist`: only the hosts of `allow`, minus those of `deny`.
 * - `open`: every host but those of `deny` (today's behaviour of every provider).
 */
export const NETWORK_MODES = ['none', 'allowlist', 'open'] as const;
export type NetworkMode = (typeof NETWORK_MODES)[number];

/**
 * One host rule: a domain name, or `*.` and a domain name for every name below it (never the
 * domain itself), with the ports it covers (absent: every port).
 */
export interface NetworkHostRule {
  readonly host: string;
  readonly ports?: readonly number[] | undefined;
}

/**
 * Where a brokered credential's secret comes from: an environment variable of the gateway host, or
 * the secret provider the host application passes in (asked by `name`). Never the sandbox.
 */
export type NetworkSecretSource =
  | { readonly kind: 'env'; readonly name: string }
  | { readonly kind: 'provider'; readonly name: string };

/** For requests to `host`: the header `header` carries the secret of `source`. */
export interface NetworkCredential {
  readonly host: string;
  readonly header: string;
  readonly source: NetworkSecretSource;
}

export interface NetworkPolicy {
  readonly mode: NetworkMode;
  readonly allow: readonly NetworkHostRule[];
  readonly deny: readonly NetworkHostRule[];
  readonly credentials: readonly NetworkCredential[];
}

/** What a caller writes: rules as `host[:port[,port...]]` strings or objects; lists optional. */
export interface NetworkPolicyInput {
  readonly mode: NetworkMode;
  readonly allow?: readonly (string | NetworkHostRule)[] | undefined;
  readonly deny?: readonly (string | NetworkHostRule)[] | undefined;
  readonly credentials?: readonly NetworkCredential[] | undefined;
}

/** The policy of a deployment that configured none: today's unrestricted egress. */
export const OPEN_NETWORK_POLICY: NetworkPolicy = Object.freeze({
  mode: 'open',
  allow: [],
  deny: [],
  credentials: [],
});

/** A per-acquire policy that would reach more than the configured one. Refused, never clipped. */
export class NetworkPolicyWideningError extends SbxError {
  static override readonly CODE = 'NETWORK_POLICY_WIDENING';
  constructor(message: string) {
    super(message);
  }
}

/**
 * A provider asked for a policy it cannot enforce (anything but `open` without deny rules).
 * Refused at acquire so no sandbox runs with egress its operator believes is restricted.
 */
export class NetworkPolicyUnenforceableError extends SbxError {
  static override readonly CODE = 'NETWORK_POLICY_UNENFORCEABLE';
  constructor(provider: string, mode: NetworkMode) {
    super(
      `${provider} cannot enforce a network policy (mode ${mode}); use mode open without deny rules or another provider`,
      { details: { provider, mode } },
    );
  }
}

/** Bounds of one policy: it is copied into every sandbox's identity and checked on every request. */
export const MAX_NETWORK_RULES = 256;
export const MAX_NETWORK_CREDENTIALS = 64;
const MAX_HOST_LENGTH = 253;
const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/;
const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_.:/-]{0,127}$/;

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * `host` lower-cased, without a trailing dot, when it is a domain name (or a `*.` pattern when
 * `wildcard`); otherwise the reason it is not. IP literals are not domain names: a rule names
 * what DNS resolves, and the proxy checks every resolved address itself.
 */
export function domainNameProblem(
  host: string,
  wildcard: boolean,
): { readonly name: string } | { readonly problem: string } {
  let name = host.toLowerCase();
  if (name.endsWith('.')) name = name.slice(0, -1);
  if (wildcard && name.startsWith('*.')) name = name.slice(2);
  if (name === '' || name.length > MAX_HOST_LENGTH) return { problem: 'is not a domain name' };
  const labels = name.split('.');
  if (!labels.every((label) => LABEL.test(label))) {
    return {
      problem: wildcard
        ? 'is not a domain name or *.domain (letters, digits, hyphens; IDNs in punycode)'
        : 'is not a domain name',
    };
  }
  // All-numeric last label: an IP literal or something a resolver may read as one.
  if (/^[0-9]+$/.test(labels[labels.length - 1]!)) {
    return { problem: 'is an IP address, not a domain name' };
  }
  return { name: host.toLowerCase().replace(/\.$/, '') };
}

function parsePort(text: string, path: string): number {
  const port = /^[0-9]{1,5}$/.test(text) ? Number(text) : NaN;
  if (!(port >= 1 && port <= 65535)) {
    throw new InvalidArgumentError(`${path}: ${JSON.stringify(text)} is not a port (1-65535)`);
  }
  return port;
}

/** One rule from `host[:port[,port...]]` or `{ host, ports }`, normalized (ports sorted, unique). */
export function parseHostRule(value: unknown, path: string): NetworkHostRule {
  let host: unknown;
  let ports: number[] | undefined;
  if (typeof value === 'string') {
    const colon = value.indexOf(':');
    host = colon === -1 ? value : value.slice(0, colon);
    if (colon !== -1) {
      ports = value
        .slice(colon + 1)
        .split(',')
        .map((p) => parsePort(p, path));
    }
  } else if (isPlainObject(value)) {
    for (const key of Object.keys(value)) {
      if (key !== 'host' && key !== 'ports') {
        throw new InvalidArgumentError(`${path}.${key} is not a rule key (host, ports)`);
      }
    }
    host = value.host;
    if (value.ports !== undefined) {
      if (!Array.isArray(value.ports) || value.ports.length === 0 || value.ports.length > 64) {
        throw new InvalidArgumentError(`${path}.ports must be a list of 1 to 64 ports`);
      }
      ports = value.ports.map((p: unknown, i: number) =>
        parsePort(typeof p === 'number' ? String(p) : '', `${path}.ports[${i}]`),
      );
    }
  } else {
    throw new InvalidArgumentError(`${path} must be "host[:port]" or { host, ports }`);
  }
  if (typeof host !== 'string') throw new InvalidArgumentError(`${path}: host must be a string`);
  const checked = domainNameProblem(host, true);
  if ('problem' in checked) {
    throw new InvalidArgumentError(`${path}: ${JSON.stringify(host)} ${checked.problem}`);
  }
  return ports === undefined
    ? { host: checked.name }
    : { host: checked.name, ports: [...new Set(ports)].sort((a, b) => a - b) };
}

function parseRules(value: unknown, path: string): NetworkHostRule[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new InvalidArgumentError(`${path} must be a list`);
  if (value.length > MAX_NETWORK_RULES) {
    throw new InvalidArgumentError(`${path}: at most ${MAX_NETWORK_RULES} rules`);
  }
  return value.map((rule, i) => parseHostRule(rule, `${path}[${i}]`));
}

function parseCredential(value: unknown, path: string): NetworkCredential {
  if (!isPlainObject(value)) throw new InvalidArgumentError(`${path} must be an object`);
  for (const key of Object.keys(value)) {
    if (!['host', 'header', 'source'].includes(key)) {
      throw new InvalidArgumentError(
        `${path}.${key} is not a credential key (host, header, source)`,
      );
    }
  }
  const host = typeof value.host === 'string' ? domainNameProblem(value.host, false) : undefined;
  if (host === undefined || 'problem' in host) {
    throw new InvalidArgumentError(`${path}.host must be a domain name`);
  }
  if (typeof value.header !== 'string' || !HEADER_NAME.test(value.header)) {
    throw new InvalidArgumentError(`${path}.header must be an HTTP header name`);
  }
  const source = value.source;
  if (
    !isPlainObject(source) ||
    (source.kind !== 'env' && source.kind !== 'provider') ||
    typeof source.name !== 'string' ||
    !SECRET_NAME.test(source.name) ||
    Object.keys(source).some((k) => k !== 'kind' && k !== 'name')
  ) {
    throw new InvalidArgumentError(
      `${path}.source must be { kind: 'env' | 'provider', name } (a variable or secret name)`,
    );
  }
  return {
    host: host.name,
    header: value.header.toLowerCase(),
    source: { kind: source.kind, name: source.name },
  };
}

/**
 * Checks a policy from a caller or storage once, centrally, and returns it normalized. Errors name
 * the key path under `path` (`spec.network.allow[2]: ...`).
 *
 * @throws InvalidArgumentError for anything malformed
 */
export function parseNetworkPolicy(value: unknown, path = 'network'): NetworkPolicy {
  if (!isPlainObject(value)) throw new InvalidArgumentError(`${path} must be an object`);
  for (const key of Object.keys(value)) {
    if (!['mode', 'allow', 'deny', 'credentials'].includes(key)) {
      throw new InvalidArgumentError(
        `${path}.${key} is not a network policy key (mode, allow, deny, credentials)`,
      );
    }
  }
  if (!NETWORK_MODES.includes(value.mode as NetworkMode)) {
    throw new InvalidArgumentError(`${path}.mode must be one of ${NETWORK_MODES.join(', ')}`);
  }
  const mode = value.mode as NetworkMode;
  const allow = parseRules(value.allow, `${path}.allow`);
  if (mode !== 'allowlist' && allow.length > 0) {
    throw new InvalidArgumentError(`${path}.allow is only meaningful with mode allowlist`);
  }
  const deny = parseRules(value.deny, `${path}.deny`);
  let credentials: NetworkCredential[] = [];
  if (value.credentials !== undefined) {
    if (!Array.isArray(value.credentials)) {
      throw new InvalidArgumentError(`${path}.credentials must be a list`);
    }
    if (value.credentials.length > MAX_NETWORK_CREDENTIALS) {
      throw new InvalidArgumentError(
        `${path}.credentials: at most ${MAX_NETWORK_CREDENTIALS} credentials`,
      );
    }
    credentials = value.credentials.map((c, i) => parseCredential(c, `${path}.credentials[${i}]`));
  }
  return { mode, allow, deny, credentials };
}

/** Whether `host` (a normalized domain name) is named by `pattern` (a domain or `*.domain`). */
export function hostPatternMatches(pattern: string, host: string): boolean {
  if (pattern.startsWith('*.')) return host.endsWith(pattern.slice(1));
  return host === pattern;
}

/** Whether `rule` covers `host` on `port`. */
export function hostRuleMatches(rule: NetworkHostRule, host: string, port: number): boolean {
  return (
    hostPatternMatches(rule.host, host) && (rule.ports === undefined || rule.ports.includes(port))
  );
}

/**
 * The verdict of `policy` on `host:port` by name alone (the proxy checks resolved addresses
 * afterwards). Deny wins over allow.
 */
export function networkVerdict(
  policy: NetworkPolicy,
  host: string,
  port: number,
): { readonly allowed: boolean; readonly reason: string } {
  if (policy.mode === 'none') return { allowed: false, reason: 'mode-none' };
  if (policy.deny.some((rule) => hostRuleMatches(rule, host, port))) {
    return { allowed: false, reason: 'denied' };
  }
  if (policy.mode === 'open') return { allowed: true, reason: 'open' };
  return policy.allow.some((rule) => hostRuleMatches(rule, host, port))
    ? { allowed: true, reason: 'allowed' }
    : { allowed: false, reason: 'not-allowed' };
}

/** Whether every host and port `inner` names is named by `outer` too. */
function ruleCovers(outer: NetworkHostRule, inner: NetworkHostRule): boolean {
  const hostCovered = inner.host.startsWith('*.')
    ? outer.host.startsWith('*.') && inner.host.endsWith(outer.host.slice(1))
    : hostPatternMatches(outer.host, inner.host);
  if (!hostCovered) return false;
  if (outer.ports === undefined) return true;
  return inner.ports !== undefined && inner.ports.every((p) => outer.ports!.includes(p));
}

const RANK: Record<NetworkMode, number> = { none: 0, allowlist: 1, open: 2 };

const sameCredential = (a: NetworkCredential, b: NetworkCredential): boolean =>
  a.host === b.host &&
  a.header === b.header &&
  a.source.kind === b.source.kind &&
  a.source.name === b.source.name;

/**
 * The policy of one acquire: `requested` (already parsed) within `configured`. The configured deny
 * rules always stay; the requested ones are added. Requested credentials must be configured ones:
 * a spec names which of the operator's secrets a sandbox gets, never a new secret source.
 *
 * @throws NetworkPolicyWideningError when `requested` reaches anything `configured` does not
 */
export function narrowNetworkPolicy(
  configured: NetworkPolicy,
  requested: NetworkPolicy | undefined,
): NetworkPolicy {
  if (requested === undefined) return configured;
  if (RANK[requested.mode] > RANK[configured.mode]) {
    throw new NetworkPolicyWideningError(
      `network.mode ${requested.mode} is wider than the configured mode ${configured.mode}`,
    );
  }
  let allow: readonly NetworkHostRule[] = [];
  if (requested.mode === 'allowlist') {
    const inherit = configured.mode === 'allowlist' && requested.allow.length === 0;
    allow = inherit ? configured.allow : requested.allow;
    if (configured.mode === 'allowlist' && !inherit) {
      requested.allow.forEach((rule, i) => {
        if (!configured.allow.some((outer) => ruleCovers(outer, rule))) {
          throw new NetworkPolicyWideningError(
            `network.allow[${i}] ${rule.host} is not within the configured allow list`,
          );
        }
      });
    }
  }
  requested.credentials.forEach((credential, i) => {
    if (!configured.credentials.some((c) => sameCredential(c, credential))) {
      throw new NetworkPolicyWideningError(
        `network.credentials[${i}] for ${credential.host} is not a configured credential`,
      );
    }
  });
  const deny = [...configured.deny];
  for (const rule of requested.deny) {
    if (!deny.some((d) => ruleCovers(d, rule) && ruleCovers(rule, d))) deny.push(rule);
  }
  if (deny.length > MAX_NETWORK_RULES) {
    throw new InvalidArgumentError(`network.deny: at most ${MAX_NETWORK_RULES} rules in all`);
  }
  return {
    mode: requested.mode,
    allow,
    deny,
    credentials:
      requested.credentials.length > 0 || requested.mode === 'none'
        ? requested.credentials
        : configured.credentials,
  };
}

/** Whether a provider must enforce `policy` (anything that is not plain open egress). */
export function networkPolicyRestricts(policy: NetworkPolicy): boolean {
  return policy.mode !== 'open' || policy.deny.length > 0 || policy.credentials.length > 0;
}

/** A canonical text of `policy` for the sandbox identity: equal policies, equal text. */
export function canonicalNetworkPolicy(policy: NetworkPolicy): string {
  const rule = (r: NetworkHostRule) => `${r.host}:${(r.ports ?? []).join(',')}`;
  const sorted = (rules: readonly NetworkHostRule[]) => [...new Set(rules.map(rule))].sort();
  return JSON.stringify([
    policy.mode,
    sorted(policy.allow),
    sorted(policy.deny),
    policy.credentials.map((c) => `${c.host} ${c.header} ${c.source.kind}:${c.source.name}`).sort(),
  ]);
}
