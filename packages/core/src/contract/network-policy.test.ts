import { describe, expect, it } from 'vitest';
import { isSbxError } from '../errors/errors.js';
import { MemorySandboxProvider } from '../testing/memory-sandbox-provider.js';
import { FakeSandboxProvider } from '../testing/fake-provider.js';
import { describeNetworkPolicyContract } from '../testing/network-policy-contract.js';
import { rejectionOf } from '../testing/rejection.js';
import { parseSandboxConfig } from '../config/config-loader.js';
import {
  OPEN_NETWORK_POLICY,
  narrowNetworkPolicy,
  networkVerdict,
  parseNetworkPolicy,
  type NetworkPolicy,
} from './network-policy.js';
import { SandboxProvider, type AcquireOptions } from './sandbox-provider.js';
import {
  NO_SPEC_SUPPORT,
  checkSandboxSpec,
  networkPolicyEnforced,
  specIdentityScope,
  type SandboxSpecPolicy,
} from './sandbox-spec.js';

const codeOf = (error: unknown) => (isSbxError(error) ? error.code : undefined);
const thrown = (fn: () => unknown): unknown => {
  try {
    fn();
  } catch (error) {
    return error;
  }
  return undefined;
};

describeNetworkPolicyContract('MemorySandboxProvider (cannot enforce)', async () => ({
  provider: new MemorySandboxProvider(),
}));
describeNetworkPolicyContract('FakeSandboxProvider (cannot enforce)', async () => ({
  provider: new FakeSandboxProvider(),
}));

const allowlist = (allow: string[], extra: Partial<NetworkPolicy> = {}): NetworkPolicy => ({
  ...parseNetworkPolicy({ mode: 'allowlist', allow }),
  ...extra,
});

describe('parseNetworkPolicy', () => {
  it('normalizes hosts, wildcards and ports', () => {
    expect(
      parseNetworkPolicy({
        mode: 'allowlist',
        allow: ['API.GitHub.com.', '*.pypi.org:443,80,443'],
      }),
    ).toEqual({
      mode: 'allowlist',
      allow: [{ host: 'api.github.com' }, { host: '*.pypi.org', ports: [80, 443] }],
      deny: [],
      credentials: [],
    });
  });

  it.each([
    [{ mode: 'allowlist', allow: ['*'] }, 'spec.network.allow[0]'],
    [{ mode: 'allowlist', allow: ['ok.com', '10.0.0.1'] }, 'spec.network.allow[1]'],
    [{ mode: 'allowlist', allow: ['a.com:0'] }, 'spec.network.allow[0]'],
    [{ mode: 'allowlist', allow: ['a.com:99999'] }, 'spec.network.allow[0]'],
    [{ mode: 'allowlist', allow: ['a.*.com'] }, 'spec.network.allow[0]'],
    [{ mode: 'wide' }, 'spec.network.mode'],
    [{ mode: 'open', allow: ['a.com'] }, 'spec.network.allow'],
    [{ mode: 'open', extra: 1 }, 'spec.network.extra'],
    [
      {
        mode: 'open',
        credentials: [{ host: 'a.com', header: 'x y', source: { kind: 'env', name: 'T' } }],
      },
      'spec.network.credentials[0].header',
    ],
    [
      {
        mode: 'open',
        credentials: [{ host: 'a.com', header: 'x', source: { kind: 'file', name: 'T' } }],
      },
      'spec.network.credentials[0].source',
    ],
  ])('refuses %j with the key path %s', (input, path) => {
    const error = thrown(() => parseNetworkPolicy(input, 'spec.network'));
    expect(codeOf(error)).toBe('INVALID_ARGUMENT');
    expect(String(error)).toContain(path);
  });

  it('bounds the number of rules before reading them', () => {
    const allow = Array.from({ length: 257 }, (_, i) => `h${i}.example.com`);
    expect(codeOf(thrown(() => parseNetworkPolicy({ mode: 'allowlist', allow })))).toBe(
      'INVALID_ARGUMENT',
    );
  });
});

describe('networkVerdict', () => {
  const policy = allowlist(['*.example.com:443', 'api.test'], {
    deny: [{ host: 'bad.example.com' }],
  });
  it.each([
    ['a.example.com', 443, true],
    ['a.b.example.com', 443, true],
    ['example.com', 443, false],
    ['a.example.com', 80, false],
    ['bad.example.com', 443, false],
    ['api.test', 8080, true],
    ['evilexample.com', 443, false],
  ])('%s:%d → %s', (host, port, allowed) => {
    expect(networkVerdict(policy, host, port).allowed).toBe(allowed);
  });
  it('mode none allows nothing; open allows all but deny', () => {
    expect(networkVerdict(parseNetworkPolicy({ mode: 'none' }), 'a.com', 443).allowed).toBe(false);
    const open = parseNetworkPolicy({ mode: 'open', deny: ['a.com'] });
    expect(networkVerdict(open, 'a.com', 443).allowed).toBe(false);
    expect(networkVerdict(open, 'b.com', 443).allowed).toBe(true);
  });
});

describe('narrowNetworkPolicy', () => {
  const configured = allowlist(['*.example.com:443', 'api.test']);

  it.each([
    ['a wider mode', { mode: 'open' }],
    ['a host outside the list', { mode: 'allowlist', allow: ['other.test'] }],
    ['a wider wildcard', { mode: 'allowlist', allow: ['*.com'] }],
    ['the apex of a wildcard', { mode: 'allowlist', allow: ['example.com:443'] }],
    ['all ports where the list names one', { mode: 'allowlist', allow: ['a.example.com'] }],
    ['another port', { mode: 'allowlist', allow: ['a.example.com:80'] }],
    [
      'an unconfigured credential',
      {
        mode: 'allowlist',
        allow: ['api.test'],
        credentials: [
          { host: 'api.test', header: 'authorization', source: { kind: 'env', name: 'HOME' } },
        ],
      },
    ],
  ])('attack: refuses %s with NETWORK_POLICY_WIDENING', (_label, requested) => {
    const error = thrown(() => narrowNetworkPolicy(configured, parseNetworkPolicy(requested)));
    expect(codeOf(error)).toBe('NETWORK_POLICY_WIDENING');
  });

  it('accepts a narrower list, keeps the configured deny rules and adds the requested ones', () => {
    const withDeny = { ...configured, deny: [{ host: 'x.example.com' }] };
    const narrowed = narrowNetworkPolicy(
      withDeny,
      parseNetworkPolicy({
        mode: 'allowlist',
        allow: ['a.example.com:443'],
        deny: ['b.example.com'],
      }),
    );
    expect(narrowed.allow).toEqual([{ host: 'a.example.com', ports: [443] }]);
    expect(narrowed.deny.map((r) => r.host)).toEqual(['x.example.com', 'b.example.com']);
    expect(narrowNetworkPolicy(withDeny, parseNetworkPolicy({ mode: 'none' })).mode).toBe('none');
  });

  it('an allowlist asked of an open configuration is taken as asked', () => {
    const narrowed = narrowNetworkPolicy(
      OPEN_NETWORK_POLICY,
      parseNetworkPolicy({ mode: 'allowlist', allow: ['x.test'] }),
    );
    expect(narrowed.allow).toEqual([{ host: 'x.test' }]);
  });
});

describe('network policy in the spec', () => {
  const support = { ...NO_SPEC_SUPPORT, network: true };
  const policy: SandboxSpecPolicy = { images: [], network: allowlist(['*.example.com']) };

  it('attack: a configured restricting policy is refused by a provider that cannot enforce it, even without a spec', () => {
    const error = thrown(() => checkSandboxSpec(undefined, NO_SPEC_SUPPORT, policy, 'P'));
    expect(codeOf(error)).toBe('NETWORK_POLICY_UNENFORCEABLE');
  });

  it('attack: a spec cannot widen the configured policy', () => {
    const error = thrown(() =>
      checkSandboxSpec({ network: { mode: 'open' } }, support, policy, 'P'),
    );
    expect(codeOf(error)).toBe('NETWORK_POLICY_WIDENING');
  });

  it('the effective policy is part of the identity; spellings of one policy name one sandbox', () => {
    const a = checkSandboxSpec(
      { network: { mode: 'allowlist', allow: ['A.example.com', 'b.example.com'] } },
      support,
      policy,
      'P',
    );
    const b = checkSandboxSpec(
      { network: { mode: 'allowlist', allow: ['b.example.com', 'a.example.com.'] } },
      support,
      policy,
      'P',
    );
    const c = checkSandboxSpec(
      { network: { mode: 'allowlist', allow: ['b.example.com'] } },
      support,
      policy,
      'P',
    );
    expect(specIdentityScope(a)).toEqual(specIdentityScope(b));
    expect(specIdentityScope(a)).not.toEqual(specIdentityScope(c));
    expect(specIdentityScope(a)).not.toEqual(specIdentityScope(undefined));
    // A spec without network keeps the identity it had before.
    expect(specIdentityScope({ image: 'x' })?.value).toBe(
      JSON.stringify(['x', null, null, null, null]),
    );
  });

  it('attack: a restricting configured policy names its own sandbox, so one made under an open configuration is never reused once the configuration restricts', () => {
    const underOpen = checkSandboxSpec(undefined, support, { images: [] }, 'P');
    const underRestriction = checkSandboxSpec(undefined, support, policy, 'P');
    expect(specIdentityScope(underRestriction)).not.toEqual(specIdentityScope(underOpen));
    // A spec that asks for something else but says nothing of the network carries it too.
    const withImage = { images: ['x'], network: policy.network };
    const images = { ...support, image: true };
    expect(specIdentityScope(checkSandboxSpec({ image: 'x' }, images, withImage, 'P'))).not.toEqual(
      specIdentityScope(checkSandboxSpec({ image: 'x' }, images, { images: ['x'] }, 'P')),
    );
    // Open configured: no spec, the identity it always had.
    expect(underOpen).toBeUndefined();
  });

  it('attack: admit refuses a restricting policy on a provider without the flag before anything is made', async () => {
    class Admitting extends SandboxProvider {
      made = 0;
      async acquire(options: AcquireOptions = {}): Promise<string> {
        this.admit(options);
        this.made += 1;
        return 'admitted';
      }
      get(): undefined {
        return undefined;
      }
      async release(): Promise<void> {}
    }
    const provider = new Admitting();
    const err = await rejectionOf(
      provider.acquire({ threadId: 't', spec: { network: { mode: 'none' } } }),
    );
    expect(codeOf(err)).toBe('NETWORK_POLICY_UNENFORCEABLE');
    expect(provider.made).toBe(0);
  });
});

describe('networkPolicyEnforced (a provider that enforces some policies)', () => {
  const noneOnly = { none: true, filtered: false, credentials: false };
  const proxied = { none: true, filtered: true, credentials: false };
  const withCredential = (mode: 'open' | 'none'): NetworkPolicy => ({
    ...parseNetworkPolicy({ mode }),
    credentials: [
      { host: 'api.example.com', header: 'authorization', source: { kind: 'env', name: 'T' } },
    ],
  });

  it('attack: a provider that enforces mode none only refuses an allow list and a deny rule', () => {
    const deny = parseNetworkPolicy({ mode: 'open', deny: ['x.example.com'] });
    expect(networkPolicyEnforced(noneOnly, parseNetworkPolicy({ mode: 'none' }))).toBe(true);
    expect(networkPolicyEnforced(noneOnly, allowlist(['a.example.com']))).toBe(false);
    expect(networkPolicyEnforced(noneOnly, deny)).toBe(false);
    expect(networkPolicyEnforced(proxied, deny)).toBe(true);
    expect(networkPolicyEnforced(proxied, allowlist(['a.example.com']))).toBe(true);
  });

  it('attack: a policy with credentials is refused by a provider that does not broker them', () => {
    expect(networkPolicyEnforced(proxied, withCredential('open'))).toBe(false);
    expect(networkPolicyEnforced({ ...proxied, credentials: true }, withCredential('open'))).toBe(
      true,
    );
    const error = thrown(() =>
      checkSandboxSpec(
        undefined,
        { ...NO_SPEC_SUPPORT, network: proxied },
        { images: [], network: withCredential('open') },
        'P',
      ),
    );
    expect(codeOf(error)).toBe('NETWORK_POLICY_UNENFORCEABLE');
  });

  it('plain open egress needs no support; true covers every policy', () => {
    expect(networkPolicyEnforced(undefined, OPEN_NETWORK_POLICY)).toBe(true);
    expect(networkPolicyEnforced(true, withCredential('none'))).toBe(true);
    expect(networkPolicyEnforced(false, parseNetworkPolicy({ mode: 'none' }))).toBe(false);
  });
});

describe('sandbox.network in the configuration', () => {
  it('is parsed into the spec policy, open by default', () => {
    expect(parseSandboxConfig({}).specPolicy.network).toEqual(OPEN_NETWORK_POLICY);
    const config = parseSandboxConfig({
      network: {
        mode: 'allowlist',
        allow: ['*.pypi.org:443'],
        credentials: [
          { host: 'api.github.com', header: 'Authorization', secret_env: 'GITHUB_TOKEN' },
        ],
      },
    });
    expect(config.specPolicy.network).toEqual({
      mode: 'allowlist',
      allow: [{ host: '*.pypi.org', ports: [443] }],
      deny: [],
      credentials: [
        {
          host: 'api.github.com',
          header: 'authorization',
          source: { kind: 'env', name: 'GITHUB_TOKEN' },
        },
      ],
    });
  });

  it.each([
    [{ mode: 'allowlist', allow: ['ok.com', '127.0.0.1'] }, 'sandbox.network.allow[1]'],
    [{ mode: 'open', allow: ['ok.com'] }, 'network.allow'],
    [
      { mode: 'open', credentials: [{ host: 'a.com', header: 'X' }] },
      'sandbox.network.credentials[0]',
    ],
    [{ mode: 'sideways' }, 'network.mode'],
  ])('refuses %j naming %s', (network, path) => {
    const error = thrown(() => parseSandboxConfig({ network }));
    expect(isSbxError(error)).toBe(true);
    expect(String(error)).toContain(path);
  });
});
