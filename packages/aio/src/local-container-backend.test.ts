import { isSbxError } from '@sbx/core';
import type { SbxError } from '@sbx/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStandin } from './aio-standin.fixture.js';
import type { StandinFixture } from './aio-standin.fixture.js';
import type {
  DockerClient,
  DockerContainerHandle,
  DockerContainerSummary,
  DockerCreateOptions,
  DockerInspectInfo,
} from './docker-client.js';
import { LocalContainerBackend, isDefinitelyMissing } from './local-container-backend.js';
import { PortAllocator } from './port-allocator.js';

/** Rejects once `signal` aborts; never resolves otherwise (a wedged engine). */
function hangUntilAborted(signal: AbortSignal | undefined): Promise<never> {
  return new Promise((_, reject) => {
    signal?.addEventListener('abort', () => reject(new Error('request aborted')), { once: true });
  });
}

function engineError(statusCode: number, message: string): Error {
  return Object.assign(new Error(`(HTTP code ${statusCode}) ${message}`), {
    statusCode,
    json: { message },
  });
}

/** An in-memory engine with per-call overrides; records what it was asked. */
class FakeDocker implements DockerClient {
  created: DockerCreateOptions[] = [];
  stops: { target: string; t: number | undefined }[] = [];
  lists = 0;
  startError: ((port: string) => Error | undefined) | undefined;
  createError: Error | undefined;
  inspectResult: ((name: string, signal?: AbortSignal) => Promise<DockerInspectInfo>) | undefined;
  stopResult: ((signal?: AbortSignal) => Promise<unknown>) | undefined;
  listResult: (() => Promise<DockerContainerSummary[]>) | undefined;
  runningAfterStart = true;
  private running = new Map<string, DockerCreateOptions>();

  async createContainer(options: DockerCreateOptions): Promise<DockerContainerHandle> {
    if (this.createError) throw this.createError;
    this.created.push(options);
    const name = options.name;
    const port = options.Labels['sbx.port'] ?? '';
    return {
      id: `id-${name}`,
      start: async () => {
        const err = this.startError?.(port);
        if (err) throw err;
        if (this.runningAfterStart) this.running.set(name, options);
      },
      inspect: async () => this.inspectDefault(name),
      stop: async () => undefined,
      remove: async () => undefined,
      pause: async () => undefined,
      unpause: async () => undefined,
    };
  }

  private async inspectDefault(name: string): Promise<DockerInspectInfo> {
    const spec = this.running.get(name) ?? this.running.get(name.replace(/^id-/, ''));
    if (!spec) throw engineError(404, `No such container: ${name}`);
    return { Id: `id-${name}`, State: { Running: true }, Config: { Labels: spec.Labels } };
  }

  getContainer(target: string): DockerContainerHandle {
    return {
      id: target,
      start: async () => undefined,
      inspect: (opts) =>
        this.inspectResult
          ? this.inspectResult(target, opts?.abortSignal)
          : this.inspectDefault(target),
      stop: async (opts) => {
        this.stops.push({ target, t: opts?.t });
        if (this.stopResult) return this.stopResult(opts?.abortSignal);
        this.running.delete(target.replace(/^id-/, ''));
        return undefined;
      },
      remove: async () => undefined,
      pause: async () => undefined,
      unpause: async () => undefined,
    };
  }

  async listContainers(): Promise<DockerContainerSummary[]> {
    this.lists += 1;
    return this.listResult ? this.listResult() : [];
  }
}

/** Hands out ports without probing the host (the fake engine binds nothing). */
function fixedPorts(): PortAllocator {
  return new PortAllocator('127.0.0.1', async () => true);
}

function backend(
  docker: FakeDocker,
  extra: Partial<ConstructorParameters<typeof LocalContainerBackend>[0]> = {},
) {
  return new LocalContainerBackend({
    docker,
    containerPrefix: 'pfx',
    image: 'img:1',
    network: 'host',
    readyTimeoutMs: 0,
    portAllocator: fixedPorts(),
    env: {},
    ...extra,
  });
}

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

describe('isDefinitelyMissing', () => {
  it('§9.3.38 treats 404, "No such object" and a not-found naming the container as missing', () => {
    expect(isDefinitelyMissing(engineError(404, 'whatever'), 'c')).toBe(true);
    expect(isDefinitelyMissing(new Error('Error: No such object: pfx-1'), 'pfx-1')).toBe(true);
    expect(isDefinitelyMissing(new Error('not found: "pfx-1"'), 'pfx-1')).toBe(true);
  });

  it('§9.3.39 does not treat daemon or credential-helper failures as missing', () => {
    expect(
      isDefinitelyMissing(new Error('Cannot connect to the Docker daemon at unix:///x'), 'pfx-1'),
    ).toBe(false);
    expect(isDefinitelyMissing(new Error('credential helper not found in $PATH'), 'pfx-1')).toBe(
      false,
    );
  });
});

describe('LocalContainerBackend (fake engine)', () => {
  let standin: StandinFixture;
  let standinPort: number;
  beforeAll(async () => {
    standin = await startStandin();
    standinPort = Number(new URL(standin.url).port);
  });
  afterAll(async () => {
    await standin.close();
  });

  it('creates <prefix>-<id> with labels and host networking, reached on 127.0.0.1', async () => {
    const docker = new FakeDocker();
    const info = await backend(docker, { basePort: 20000 }).create({ sandboxId: 'abc' });
    expect(info).toMatchObject({
      sandboxId: 'abc',
      sandboxUrl: 'http://127.0.0.1:20000',
      containerName: 'pfx-abc',
      containerId: 'id-pfx-abc',
      managed: true,
    });
    expect(docker.created[0]?.Env).toContain('SBX_AIO_PORT=20000');
  });

  it('§4.3 moves to the next port when the engine reports the port taken', async () => {
    const docker = new FakeDocker();
    docker.startError = (port) =>
      port === '20000' ? engineError(500, 'driver failed: port is already allocated') : undefined;
    const info = await backend(docker, { basePort: 20000 }).create({ sandboxId: 'p' });
    expect(info.sandboxUrl).toBe('http://127.0.0.1:20001');
    expect(docker.created.map((c) => c.Labels['sbx.port'])).toEqual(['20000', '20001']);
  });

  it('§4.3 gives up after ten taken ports', async () => {
    const docker = new FakeDocker();
    docker.startError = () => engineError(500, 'listen tcp: address already in use');
    const err = await rejection(backend(docker, { basePort: 20000 }).create({ sandboxId: 'p' }));
    expect((err as Error).message).toContain('all candidate ports are already allocated');
    expect(docker.created).toHaveLength(10);
  });

  it('§4.3 adopts the running container on a name conflict', async () => {
    const docker = new FakeDocker();
    docker.createError = engineError(
      409,
      'Conflict. The container name "/pfx-x" is already in use',
    );
    docker.inspectResult = async () => ({
      Id: 'existing',
      Created: '2024-05-01T10:20:30.5Z',
      State: { Running: true },
      Config: { Labels: { 'sbx.managed': 'true', 'sbx.port': String(standinPort) } },
      HostConfig: { NetworkMode: 'host' },
    });
    const info = await backend(docker).create({ sandboxId: 'x' });
    expect(info).toMatchObject({
      containerId: 'existing',
      sandboxUrl: `http://127.0.0.1:${standinPort}`,
    });
  });

  it('stops and fails a container that exits before it is ready', async () => {
    const docker = new FakeDocker();
    docker.runningAfterStart = false;
    const err = await rejection(
      backend(docker, { readyTimeoutMs: 60_000 }).create({ sandboxId: 'dies' }),
    );
    expect((err as Error).message).toContain('did not answer GET /v1/sandbox');
    expect(docker.stops.map((s) => s.target)).toEqual(['id-pfx-dies']);
  });

  it('§9.3.41 stops with a 10 s grace; a stop past its bound propagates', async () => {
    const docker = new FakeDocker();
    const b = backend(docker, { stopTimeoutMs: 30 });
    await b.destroy({
      sandboxId: 'a',
      sandboxUrl: 'http://127.0.0.1:1',
      containerName: 'pfx-a',
      createdAt: 0,
    });
    expect(docker.stops[0]).toEqual({ target: 'pfx-a', t: 10 });
    docker.stopResult = (signal) => hangUntilAborted(signal);
    const err = await rejection(
      b.destroy({ sandboxId: 'a', sandboxUrl: '', containerName: 'pfx-a', createdAt: 0 }),
    );
    expect(isSbxError(err) && (err as SbxError).message).toContain(
      'Timed out stopping container pfx-a',
    );
  });

  it('a stop ends once the engine removed the container (AutoRemove), so its name is free for the next create', async () => {
    const docker = new FakeDocker();
    const b = backend(docker);
    const seen: string[] = [];
    let removed = false;
    docker.stopResult = async () => {
      // Stopped, and removed by the engine only after two more looks.
      let looks = 0;
      docker.inspectResult = async (name) => {
        seen.push(name);
        looks += 1;
        if (looks > 2) {
          removed = true;
          throw engineError(404, `No such container: ${name}`);
        }
        return { Id: `id-${name}`, State: { Running: false }, HostConfig: { AutoRemove: true } };
      };
      return undefined;
    };
    await b.destroy({ sandboxId: 'a', sandboxUrl: '', containerName: 'pfx-a', createdAt: 0 });
    expect(removed).toBe(true);
    expect(seen).toEqual(['pfx-a', 'pfx-a', 'pfx-a']);
  });

  it('a stopped container made without AutoRemove is not waited for', async () => {
    const docker = new FakeDocker();
    const b = backend(docker, { stopTimeoutMs: 60_000 });
    let looks = 0;
    docker.inspectResult = async (name) => {
      looks += 1;
      return { Id: `id-${name}`, State: { Running: false }, HostConfig: { AutoRemove: false } };
    };
    await b.destroy({ sandboxId: 'a', sandboxUrl: '', containerName: 'pfx-a', createdAt: 0 });
    expect(looks).toBe(1);
  });

  it('§4.6 an already stopped or vanished container is a successful stop', async () => {
    const docker = new FakeDocker();
    const b = backend(docker);
    docker.stopResult = async () => Promise.reject(engineError(404, 'No such container: pfx-a'));
    await b.destroy({ sandboxId: 'a', sandboxUrl: '', containerName: 'pfx-a', createdAt: 0 });
    docker.stopResult = async () => Promise.reject(engineError(304, 'container already stopped'));
    await b.destroy({ sandboxId: 'a', sandboxUrl: '', containerName: 'pfx-a', createdAt: 0 });
    docker.stopResult = async () =>
      Promise.reject(engineError(500, 'Cannot connect to the Docker daemon'));
    await expect(
      b.destroy({ sandboxId: 'a', sandboxUrl: '', containerName: 'pfx-a', createdAt: 0 }),
    ).rejects.toThrow(/Failed to stop container/);
  });

  it('§4.7 health: running alive, stopped or missing dead, anything else unknown', async () => {
    const docker = new FakeDocker();
    const b = backend(docker, { inspectTimeoutMs: 30 });
    const info = { sandboxId: 'h', sandboxUrl: '', containerName: 'pfx-h', createdAt: 0 };
    docker.inspectResult = async () => ({ Id: 'i', State: { Running: true } });
    expect(await b.checkHealth(info)).toBe('alive');
    docker.inspectResult = async () => ({ Id: 'i', State: { Running: false } });
    expect(await b.checkHealth(info)).toBe('dead');
    docker.inspectResult = async () => Promise.reject(engineError(404, 'No such container: pfx-h'));
    expect(await b.checkHealth(info)).toBe('dead');
    docker.inspectResult = async () =>
      Promise.reject(new Error('Cannot connect to the Docker daemon'));
    expect(await b.checkHealth(info)).toBe('unknown');
    docker.inspectResult = (_n, signal) => hangUntilAborted(signal);
    expect(await b.checkHealth(info)).toBe('unknown');
  });

  it('§9.3.40 discover returns null (never throws) on an inspect failure or timeout', async () => {
    const docker = new FakeDocker();
    const b = backend(docker, { inspectTimeoutMs: 30 });
    docker.inspectResult = async () =>
      Promise.reject(new Error('Cannot connect to the Docker daemon'));
    expect(await b.discover('d')).toBeNull();
    docker.inspectResult = (_n, signal) => hangUntilAborted(signal);
    expect(await b.discover('d')).toBeNull();
    docker.inspectResult = async () => ({ Id: 'i', State: { Running: false } });
    expect(await b.discover('d')).toBeNull();
  });

  it('§9.3.42 §9.3.44 §9.3.47 lists by prefix with ports from labels or the 8080 mapping', async () => {
    const docker = new FakeDocker();
    docker.listResult = async () => [
      {
        Id: '1',
        Names: ['/pfx-aaa'],
        Created: 1700000000,
        Labels: { 'sbx.managed': 'true', 'sbx.port': '18001', 'sbx.skills-root': '/mnt/skills' },
        HostConfig: { NetworkMode: 'host' },
      },
      {
        Id: '2',
        Names: ['/pfx-bbb'],
        Created: 1700000001,
        Ports: [{ PrivatePort: 8080, PublicPort: 18002, Type: 'tcp' }],
      },
      { Id: '3', Names: ['/pfx-ccc'], Created: 1700000002, Ports: [] },
      { Id: '4', Names: ['/other-pfx-ddd'], Created: 1 },
      { Id: '5', Names: ['/pfx-'], Created: 1 },
    ];
    const list = await backend(docker, { network: 'bridge', env: {} }).listRunning();
    expect(list.map((i) => [i.sandboxId, i.sandboxUrl, i.managed])).toEqual([
      ['aaa', 'http://127.0.0.1:18001', true],
      ['bbb', 'http://localhost:18002', false],
      ['ccc', '', false],
    ]);
    expect(list[0]?.createdAt).toBe(1700000000);
    expect(docker.lists).toBe(1);
  });

  it('§9.3.43 lists nothing when the engine cannot be asked', async () => {
    const docker = new FakeDocker();
    docker.listResult = async () =>
      Promise.reject(new Error('Cannot connect to the Docker daemon'));
    expect(await backend(docker).listRunning()).toEqual([]);
  });
});
