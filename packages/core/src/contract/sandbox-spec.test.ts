import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../errors/errors.js';
import { deriveSandboxScopeToken } from '../identity/identity.js';
import { DEFAULT_SPEC_MAXIMA, SPEC_CEILINGS, specPolicyWithin } from './sandbox-spec-bounds.js';
import {
  DEFAULT_SPEC_POLICY,
  NO_SPEC_SUPPORT,
  SandboxSpecError,
  checkSandboxSpec,
  specIdentityScope,
  type SandboxSpecSupport,
} from './sandbox-spec.js';

const ALL: SandboxSpecSupport = {
  image: true,
  resources: ['memoryMb', 'cpus', 'pids', 'diskGb'],
  timeout: true,
  labels: true,
};
const policy = { images: ['img:1'], maxMemoryMb: 2048, maxTimeoutSeconds: 3600 };

describe('checkSandboxSpec', () => {
  it('passes what the provider honours within bounds, normalized', () => {
    expect(checkSandboxSpec(undefined, NO_SPEC_SUPPORT, policy, 'P')).toBeUndefined();
    expect(checkSandboxSpec({}, NO_SPEC_SUPPORT, policy, 'P')).toBeUndefined();
    expect(
      checkSandboxSpec(
        {
          image: 'img:1',
          resources: { memoryMb: 512, cpus: 0.5, pids: undefined },
          timeoutSeconds: 60,
          labels: { 'sbx.dev/tenant': 'acme' },
        },
        ALL,
        policy,
        'P',
      ),
    ).toEqual({
      image: 'img:1',
      resources: { memoryMb: 512, cpus: 0.5 },
      timeoutSeconds: 60,
      labels: { 'sbx.dev/tenant': 'acme' },
    });
  });

  it.each([
    [{ image: 'img:1' }, 'P cannot honour spec.image'],
    [{ resources: { cpus: 1 } }, 'P cannot honour spec.resources.cpus'],
    [{ timeoutSeconds: 5 }, 'P cannot honour spec.timeoutSeconds'],
    [{ labels: { a: 'b' } }, 'P cannot honour spec.labels'],
  ])('refuses %j on a provider that honours nothing', (spec, message) => {
    expect(() => checkSandboxSpec(spec, NO_SPEC_SUPPORT, policy, 'P')).toThrow(SandboxSpecError);
    expect(() => checkSandboxSpec(spec, NO_SPEC_SUPPORT, policy, 'P')).toThrow(message);
  });

  it('enforces the allowlist and the bounds', () => {
    expect(() => checkSandboxSpec({ image: 'other:2' }, ALL, policy, 'P')).toThrow(
      'spec.image "other:2" is not in sandbox.spec.images',
    );
    expect(() => checkSandboxSpec({ resources: { memoryMb: 4096 } }, ALL, policy, 'P')).toThrow(
      'spec.resources.memoryMb 4096 is over the configured maximum 2048',
    );
    expect(() => checkSandboxSpec({ timeoutSeconds: 7200 }, ALL, policy, 'P')).toThrow(
      SandboxSpecError,
    );
  });

  it.each([
    [{ resources: { memoryMb: -1 } }],
    [{ resources: { pids: 1.5 } }],
    [{ resources: { gpus: 1 } as never }],
    [{ labels: { 'Upper Case': 'x' } }],
    [{ labels: { 'sbx.managed': 'false' } }],
    [{ labels: { ok: 'line\nbreak' } }],
    [{ labels: Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, 'v'])) }],
  ])('refuses the malformed %j with a typed error', (spec) => {
    expect(() => checkSandboxSpec(spec, ALL, policy, 'P')).toThrow(InvalidArgumentError);
  });
});

describe('specIdentityScope', () => {
  it('image and resources change the identity; labels and timeout do not', () => {
    const id = (spec: Parameters<typeof specIdentityScope>[0]) => {
      const scope = specIdentityScope(spec);
      return deriveSandboxScopeToken({ userId: 'u', threadId: 't', ...(scope ? { scope } : {}) });
    };
    const base = id(undefined);
    expect(id({ labels: { a: 'b' }, timeoutSeconds: 9 })).toBe(base);
    const small = id({ resources: { memoryMb: 512 } });
    expect(small).not.toBe(base);
    expect(id({ resources: { memoryMb: 512 } })).toBe(small);
    expect(id({ resources: { memoryMb: 1024 } })).not.toBe(small);
    expect(id({ image: 'img:1' })).not.toBe(base);
    expect(id({ image: 'img:1', resources: { memoryMb: 512 } })).not.toBe(small);
  });
});

describe('spec bounds when nothing is configured', () => {
  // The values of the attack, built at run time: 2^31 processes, 1e300 MiB, a million CPUs.
  const huge = {
    pids: 2 ** 31,
    memoryMb: Number(`1e${300}`),
    cpus: 10 ** 6,
    diskGb: 10 ** 9,
  } as const;

  it.each(Object.entries(huge))(
    'attack: resources.%s = %d is refused, typed, by the default policy (the hardened limit stays)',
    (name, value) => {
      const spec = { resources: { [name]: value } };
      let error: unknown;
      try {
        checkSandboxSpec(spec, ALL, DEFAULT_SPEC_POLICY, 'P');
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(SandboxSpecError);
      expect((error as Error).message).toContain('over the default maximum');
    },
  );

  it('attack: a huge or endless timeout is refused by the default policy', () => {
    expect(() =>
      checkSandboxSpec({ timeoutSeconds: Number(`1e${300}`) }, ALL, DEFAULT_SPEC_POLICY, 'P'),
    ).toThrow(SandboxSpecError);
    expect(() =>
      checkSandboxSpec({ timeoutSeconds: Infinity }, ALL, DEFAULT_SPEC_POLICY, 'P'),
    ).toThrow(InvalidArgumentError);
  });

  it.each([NaN, Infinity, -Infinity, 0, -1])(
    'refuses the non-finite or non-positive %d for every resource with a typed error',
    (value) => {
      for (const name of ['memoryMb', 'cpus', 'pids', 'diskGb']) {
        expect(() =>
          checkSandboxSpec({ resources: { [name]: value } }, ALL, DEFAULT_SPEC_POLICY, 'P'),
        ).toThrow(InvalidArgumentError);
      }
    },
  );

  it('admits what narrows the hardened sandbox, up to its limits', () => {
    const max = DEFAULT_SPEC_MAXIMA;
    const spec = {
      resources: { memoryMb: max.memoryMb, cpus: 0.5, pids: 256, diskGb: max.diskGb },
      timeoutSeconds: max.timeoutSeconds,
    };
    expect(checkSandboxSpec(spec, ALL, DEFAULT_SPEC_POLICY, 'P')).toEqual(spec);
    expect(() =>
      checkSandboxSpec({ resources: { pids: max.pids + 1 } }, ALL, DEFAULT_SPEC_POLICY, 'P'),
    ).toThrow(SandboxSpecError);
    expect(() =>
      checkSandboxSpec({ resources: { cpus: max.cpus + 0.5 } }, ALL, DEFAULT_SPEC_POLICY, 'P'),
    ).toThrow(SandboxSpecError);
  });

  it('a configured maximum widens the bound, never past the ceiling, and only the field it names', () => {
    const wide = { images: [], maxPids: 4096, maxMemoryMb: Number(`1e${300}`) };
    expect(checkSandboxSpec({ resources: { pids: 4096 } }, ALL, wide, 'P')).toEqual({
      resources: { pids: 4096 },
    });
    expect(() =>
      checkSandboxSpec({ resources: { memoryMb: SPEC_CEILINGS.memoryMb + 1 } }, ALL, wide, 'P'),
    ).toThrow('over the configured maximum');
    expect(() =>
      checkSandboxSpec({ resources: { cpus: DEFAULT_SPEC_MAXIMA.cpus * 2 } }, ALL, wide, 'P'),
    ).toThrow('over the default maximum');
  });

  it('a configured maximum that is not a positive number is refused, not read as "no bound"', () => {
    for (const maxPids of [NaN, 0, -5]) {
      expect(() =>
        checkSandboxSpec({ resources: { pids: 2 ** 31 } }, ALL, { images: [], maxPids }, 'P'),
      ).toThrow(InvalidArgumentError);
    }
  });

  it('refuses a CPU share engines cannot run, and malformed resources or labels', () => {
    expect(() =>
      checkSandboxSpec({ resources: { cpus: Number(`1e-${300}`) } }, ALL, DEFAULT_SPEC_POLICY, 'P'),
    ).toThrow(SandboxSpecError);
    for (const spec of [
      { resources: null },
      { resources: [1] },
      { resources: 'cpus' },
      { labels: null },
      { labels: ['a'] },
    ]) {
      expect(() => checkSandboxSpec(spec as never, ALL, DEFAULT_SPEC_POLICY, 'P')).toThrow(
        InvalidArgumentError,
      );
    }
  });
});

describe('specPolicyWithin (a provider’s own limits as the default bounds)', () => {
  it('an absent maximum becomes the provider’s limit, so a spec only narrows the sandbox it hands out', () => {
    const policy = specPolicyWithin(DEFAULT_SPEC_POLICY, { pids: 256, memoryMb: 512, cpus: 1 });
    expect(() => checkSandboxSpec({ resources: { pids: 512 } }, ALL, policy, 'P')).toThrow(
      'over the configured maximum 256',
    );
    expect(checkSandboxSpec({ resources: { pids: 128, cpus: 0.5 } }, ALL, policy, 'P')).toEqual({
      resources: { pids: 128, cpus: 0.5 },
    });
  });

  it('keeps a configured maximum, and leaves the hardened default where the provider has no limit', () => {
    const policy = specPolicyWithin(
      { images: [], maxPids: 4096 },
      { pids: 256, diskGb: undefined, memoryMb: 0 },
    );
    expect(policy.maxPids).toBe(4096);
    expect(policy.maxDiskGb).toBeUndefined();
    expect(policy.maxMemoryMb).toBeUndefined();
    expect(() =>
      checkSandboxSpec({ resources: { diskGb: DEFAULT_SPEC_MAXIMA.diskGb + 1 } }, ALL, policy, 'P'),
    ).toThrow('over the default maximum');
  });
});
