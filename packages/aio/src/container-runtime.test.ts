import { describe, expect, it } from 'vitest';
import { detectContainerRuntime, dockerConnectionOptions } from './container-runtime.js';
import type { RuntimeProbe } from './container-runtime.js';

function sockets(...paths: string[]): RuntimeProbe & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    async isSocket(path) {
      asked.push(path);
      return paths.includes(path);
    },
  };
}

describe('detectContainerRuntime', () => {
  it('prefers DOCKER_HOST and asks the file system nothing', async () => {
    const probe = sockets('/var/run/docker.sock');
    const found = await detectContainerRuntime({
      env: { DOCKER_HOST: 'tcp://127.0.0.1:2375' },
      probe,
    });
    expect(found).toEqual({
      kind: 'docker',
      address: 'tcp://127.0.0.1:2375',
      source: 'DOCKER_HOST',
    });
    expect(probe.asked).toEqual([]);
  });

  it('reports a Podman socket named in DOCKER_HOST as podman', async () => {
    const found = await detectContainerRuntime({
      env: { DOCKER_HOST: 'unix:///run/user/1000/podman/podman.sock' },
      probe: sockets(),
    });
    expect(found?.kind).toBe('podman');
  });

  it('uses CONTAINER_HOST (Podman) next', async () => {
    const found = await detectContainerRuntime({
      env: { CONTAINER_HOST: 'unix:///run/podman/podman.sock' },
      probe: sockets(),
    });
    expect(found).toEqual({
      kind: 'podman',
      address: 'unix:///run/podman/podman.sock',
      source: 'CONTAINER_HOST',
    });
  });

  it("finds Docker's socket before Podman's", async () => {
    const found = await detectContainerRuntime({
      env: {},
      probe: sockets('/run/docker.sock', '/run/podman/podman.sock'),
      uid: 0,
    });
    expect(found).toEqual({
      kind: 'docker',
      address: 'unix:///run/docker.sock',
      source: 'docker-socket',
    });
  });

  it('finds a rootless Podman socket under XDG_RUNTIME_DIR, else under /run/user/<uid>', async () => {
    expect(
      (
        await detectContainerRuntime({
          env: { XDG_RUNTIME_DIR: '/run/user/1000' },
          probe: sockets('/run/user/1000/podman/podman.sock'),
        })
      )?.address,
    ).toBe('unix:///run/user/1000/podman/podman.sock');
    const probe = sockets('/run/user/1001/podman/podman.sock');
    const found = await detectContainerRuntime({ env: {}, probe, uid: 1001 });
    expect(found).toMatchObject({ kind: 'podman', source: 'podman-socket' });
  });

  it('falls back to the rootful Podman socket and reports nothing when there is no engine', async () => {
    expect(
      (await detectContainerRuntime({ env: {}, probe: sockets('/run/podman/podman.sock'), uid: 0 }))
        ?.address,
    ).toBe('unix:///run/podman/podman.sock');
    expect(await detectContainerRuntime({ env: {}, probe: sockets(), uid: 0 })).toBeUndefined();
  });
});

describe('dockerConnectionOptions', () => {
  it('turns unix and tcp addresses into client options', () => {
    expect(
      dockerConnectionOptions({
        kind: 'docker',
        address: 'unix:///tmp/d.sock',
        source: 'DOCKER_HOST',
      }),
    ).toEqual({ socketPath: '/tmp/d.sock' });
    expect(
      dockerConnectionOptions({
        kind: 'docker',
        address: 'tcp://127.0.0.1:2375',
        source: 'DOCKER_HOST',
      }),
    ).toEqual({ host: '127.0.0.1', port: 2375, protocol: 'http' });
    expect(
      dockerConnectionOptions({
        kind: 'docker',
        address: 'tcp://[::1]:2376',
        source: 'DOCKER_HOST',
      }),
    ).toEqual({ host: '::1', port: 2376, protocol: 'https' });
    expect(
      dockerConnectionOptions({ kind: 'docker', address: 'ssh://me@box', source: 'DOCKER_HOST' }),
    ).toBeUndefined();
  });
});
