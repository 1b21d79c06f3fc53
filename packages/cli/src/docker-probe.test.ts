import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  DEFAULT_DOCKER_SOCKET,
  dockerEndpointFrom,
  dockerImagePresent,
  dockerVersion,
} from './docker-probe.js';
import { startFakeDocker, tempDir } from './test-support.js';

describe('dockerEndpointFrom', () => {
  it('reads DOCKER_HOST as the docker CLI does', () => {
    expect(dockerEndpointFrom({})).toEqual({ kind: 'socket', socketPath: DEFAULT_DOCKER_SOCKET });
    expect(dockerEndpointFrom({ DOCKER_HOST: 'unix:///run/user/1000/docker.sock' })).toEqual({
      kind: 'socket',
      socketPath: '/run/user/1000/docker.sock',
    });
    expect(dockerEndpointFrom({ DOCKER_HOST: 'tcp://127.0.0.1' })).toEqual({
      kind: 'tcp',
      host: '127.0.0.1',
      port: 2375,
      tls: false,
    });
    expect(
      dockerEndpointFrom({ DOCKER_HOST: 'tcp://localhost:2376', DOCKER_TLS_VERIFY: '1' }),
    ).toEqual({
      kind: 'tcp',
      host: 'localhost',
      port: 2376,
      tls: true,
    });
    expect(() => dockerEndpointFrom({ DOCKER_HOST: 'ssh://me@box' })).toThrow(
      /only unix:\/\/ and tcp:\/\//,
    );
  });
});

describe('Docker probes against an Engine API stand-in', () => {
  let dir: { dir: string; remove: () => Promise<void> };
  beforeEach(async () => {
    dir = await tempDir('docker');
  });
  afterEach(async () => {
    await dir.remove();
  });

  it('reads the version and tells present from missing images (slashes kept in the name)', async () => {
    const socketPath = path.join(dir.dir, 'd.sock');
    const docker = await startFakeDocker(socketPath, ['registry.example/ns/img:1']);
    try {
      const endpoint = { kind: 'socket' as const, socketPath };
      const signal = AbortSignal.timeout(30_000);
      expect(await dockerVersion(endpoint, signal)).toBe('27.0.1');
      expect(await dockerImagePresent(endpoint, 'registry.example/ns/img:1', signal)).toBe(true);
      expect(await dockerImagePresent(endpoint, 'other:latest', signal)).toBe(false);
    } finally {
      await docker.close();
    }
  });

  it('refuses TLS endpoints instead of sending plain HTTP to them', async () => {
    await expect(
      dockerVersion(
        { kind: 'tcp', host: '127.0.0.1', port: 1, tls: true },
        AbortSignal.timeout(1000),
      ),
    ).rejects.toThrow(/TLS-protected/);
  });
});
