import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../errors/errors.js';
import { deriveSandboxScopeToken } from '../identity/identity.js';
import {
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
