import { parseSandboxConfig } from '@sbx/core';
import { describe, expect, it } from 'vitest';
import { configWithoutRefusedKeys, refusedKeyOf } from './config-without-refused-keys.js';

describe('refusedKeyOf', () => {
  it('finds the key an issue path starts at, as core writes paths', () => {
    expect(refusedKeyOf('sandbox.mounts[0].host_path')).toEqual(['sandbox', 'mounts']);
    expect(refusedKeyOf('sandbox.environment["BAD NAME"]')).toEqual(['sandbox', 'environment']);
    expect(refusedKeyOf('sandbox["odd key"]')).toEqual(['sandbox', 'odd key']);
    expect(refusedKeyOf('skills.path')).toEqual(['skills']);
    expect(refusedKeyOf('sandbox')).toBeUndefined();
    expect(refusedKeyOf('')).toBeUndefined();
  });
});

describe('configWithoutRefusedKeys', () => {
  const options = { env: {}, cwd: '/' };
  function refused(document: unknown) {
    try {
      parseSandboxConfig(document, options);
    } catch (err) {
      return (err as { issues: { path: string; message: string }[] }).issues;
    }
    throw new Error('expected a refusal');
  }

  it('keeps the provider blocks of a section whose core keys are refused', () => {
    const document = {
      sandbox: { use: '@sbx/e2b', replicas: 0, 'odd key': 1, e2b: { templat: 'x' } },
    };
    const config = configWithoutRefusedKeys(document, refused(document), options);
    expect(config?.use).toBe('@sbx/e2b');
    expect((config as unknown as { e2b: unknown }).e2b).toEqual({ templat: 'x' });
  });

  it('works on a bare section too', () => {
    const document = { replicas: 0, aio: { netwrok: 'host' } };
    const config = configWithoutRefusedKeys(document, refused(document), options);
    expect((config as unknown as { aio: unknown }).aio).toEqual({ netwrok: 'host' });
  });

  it('gives none for a document refused as a whole', () => {
    expect(configWithoutRefusedKeys(['a'], refused(['a']), options)).toBeUndefined();
    const document = { sandbox: 5 };
    expect(configWithoutRefusedKeys(document, refused(document), options)).toBeUndefined();
  });
});
