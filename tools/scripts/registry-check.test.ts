import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DEMO_EXPECTATIONS,
  checkDemoOutput,
  createRegistryUser,
  foreignSbxPackages,
  registryConfig,
  startRegistry,
} from './registry-check.mjs';

describe('checkDemoOutput', () => {
  it('accepts output with every expected line and names each missing one', () => {
    const full = DEMO_EXPECTATIONS.map(([, text]) => `  ${text}`).join('\n');
    expect(checkDemoOutput(full)).toEqual([]);
    const withoutRedaction = full.replace('token=[redacted]', 'token=abc');
    expect(checkDemoOutput(withoutRedaction)).toEqual([
      'demo output lacks "token=[redacted]" (request secrets are redacted in output)',
    ]);
  });
});

describe('foreignSbxPackages', () => {
  const published = new Map([
    ['@sbx/core', 'sha512-core'],
    ['@sbx/local', 'sha512-local'],
  ]);
  it('flags @sbx packages whose tarball is not the published one, at any depth', () => {
    const lock = {
      packages: {
        '': { name: 'consumer' },
        'node_modules/@sbx/core': { integrity: 'sha512-core' },
        'node_modules/@sbx/local': { integrity: 'sha512-other' },
        'node_modules/x/node_modules/@sbx/authz': { integrity: 'sha512-authz' },
        'node_modules/zod': { integrity: 'sha512-zod' },
      },
    };
    expect(foreignSbxPackages(lock, published)).toEqual([
      'node_modules/@sbx/local: integrity sha512-other is not the published sha512-local',
      'node_modules/x/node_modules/@sbx/authz: @sbx/authz was not published to the private registry',
    ]);
  });
});

describe('registryConfig', () => {
  it('serves only the @sbx scope and has no uplink to proxy through', () => {
    const config = parse(registryConfig());
    expect(config.uplinks).toEqual({});
    expect(Object.keys(config.packages)).toEqual(['@sbx/*']);
    expect(config.packages['@sbx/*'].proxy).toBeUndefined();
  });
});

describe('the private registry', () => {
  let dir: string;
  let registry: { url: string; stop: () => Promise<void> };
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'sbx-registry-test-'));
    registry = await startRegistry(dir);
  });
  afterAll(async () => {
    await registry?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('listens on loopback only', () => {
    expect(new URL(registry.url).hostname).toBe('127.0.0.1');
  });

  it('creates a user and answers with a token', async () => {
    expect(await createRegistryUser(registry.url, 'someone')).toMatch(/\S{8,}/);
  });

  it('proxies nothing: a third-party package is not served, an unpublished @sbx one is not found', async () => {
    // No package rule covers it (refused), and with no uplink there is nowhere to fetch it from.
    const response = await fetch(new URL('zod', registry.url));
    expect([401, 403, 404]).toContain(response.status);
    const scoped = await fetch(new URL('@sbx%2fcore', registry.url));
    expect(scoped.status).toBe(404);
  });

  it('is gone after stop()', async () => {
    await registry.stop();
    await expect(fetch(new URL('-/ping', registry.url))).rejects.toThrow();
  });
});
