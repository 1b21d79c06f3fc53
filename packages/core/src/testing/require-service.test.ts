import http from 'node:http';
import net from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { requireService, serviceAddress, servicesRequired } from './require-service.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!();
});

function track(server: net.Server): void {
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // http servers keep idle keep-alive sockets open; close them so close() resolves.
        (server as http.Server).closeAllConnections?.();
      }),
  );
}

/** A TCP server on 127.0.0.1 that answers each line with `reply` (a stand-in Redis). */
async function lineServer(reply: string | undefined): Promise<number> {
  const server = net.createServer((socket) => {
    socket.on('error', () => {});
    socket.on('data', () => {
      if (reply !== undefined) socket.write(reply);
    });
  });
  track(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as net.AddressInfo).port;
}

/** A port nothing listens on: bound once by us, then released. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function httpServer(
  listen: (server: http.Server) => Promise<void>,
  status: number,
): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    res.statusCode = req.url === '/_ping' ? status : 404;
    res.end(req.url === '/_ping' ? 'OK' : 'not found');
  });
  track(server);
  await listen(server);
  return server;
}

describe('servicesRequired', () => {
  it('is true on CI or when opted in, false otherwise', () => {
    expect(servicesRequired({ CI: 'true' })).toBe(true);
    expect(servicesRequired({ SBX_REQUIRE_SERVICES: '1' })).toBe(true);
    expect(servicesRequired({})).toBe(false);
    expect(servicesRequired({ CI: 'false', SBX_REQUIRE_SERVICES: '0' })).toBe(false);
  });
});

describe('serviceAddress', () => {
  it('reads SBX_REDIS_URL for redis and treats an empty value as unset', () => {
    expect(serviceAddress('redis', { SBX_REDIS_URL: 'redis://127.0.0.1:7000' })).toBe(
      'redis://127.0.0.1:7000',
    );
    expect(serviceAddress('redis', { SBX_REDIS_URL: '' })).toBeUndefined();
    expect(serviceAddress('redis', {})).toBeUndefined();
  });

  it('reads DOCKER_HOST for docker, defaulting to the conventional socket', () => {
    expect(serviceAddress('docker', { DOCKER_HOST: 'unix:///tmp/x.sock' })).toBe(
      'unix:///tmp/x.sock',
    );
    expect(serviceAddress('docker', {})).toBe('unix:///var/run/docker.sock');
  });
});

describe('requireService(redis)', () => {
  it('resolves the URL when the server answers PING with +PONG', async () => {
    const port = await lineServer('+PONG\r\n');
    const url = `redis://127.0.0.1:${port}`;
    await expect(requireService('redis', { env: { SBX_REDIS_URL: url } })).resolves.toBe(url);
  });

  it('accepts -NOAUTH: a password-protected Redis is still a Redis', async () => {
    const port = await lineServer('-NOAUTH Authentication required.\r\n');
    const url = `redis://:secret@127.0.0.1:${port}`;
    await expect(requireService('redis', { env: { SBX_REDIS_URL: url } })).resolves.toBe(url);
  });

  it('skips with a logged reason when the port answers something that is not Redis', async () => {
    const port = await lineServer('HTTP/1.1 400 Bad Request\r\n\r\n');
    const lines: string[] = [];
    const got = await requireService('redis', {
      env: { SBX_REDIS_URL: `redis://127.0.0.1:${port}` },
      log: (l) => lines.push(l),
    });
    expect(got).toBeUndefined();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('PING answered HTTP/1.1 400');
    expect(lines[0]).toContain('start-redis.sh');
  });

  it('skips when nothing listens, and when the URL is unset', async () => {
    const lines: string[] = [];
    const port = await closedPort();
    await expect(
      requireService('redis', {
        env: { SBX_REDIS_URL: `redis://127.0.0.1:${port}` },
        log: (l) => lines.push(l),
      }),
    ).resolves.toBeUndefined();
    await expect(requireService('redis', { env: {}, log: (l) => lines.push(l) })).resolves.toBe(
      undefined,
    );
    expect(lines[0]).toMatch(/ECONNREFUSED/);
    expect(lines[1]).toContain('SBX_REDIS_URL is not set');
  });

  it('times out on a server that never replies', async () => {
    const port = await lineServer(undefined);
    const lines: string[] = [];
    const got = await requireService('redis', {
      env: { SBX_REDIS_URL: `redis://127.0.0.1:${port}` },
      timeoutMs: 50,
      log: (l) => lines.push(l),
    });
    expect(got).toBeUndefined();
    expect(lines[0]).toContain('no reply to PING within 50ms');
  });

  it('throws instead of skipping when services are required', async () => {
    const port = await closedPort();
    for (const env of [{ CI: 'true' }, { SBX_REQUIRE_SERVICES: '1' }]) {
      await expect(
        requireService('redis', {
          env: { ...env, SBX_REDIS_URL: `redis://127.0.0.1:${port}` },
          log: () => {},
        }),
      ).rejects.toThrow(/required service unavailable.*redis/);
    }
  });

  it('rejects a non-redis URL with a clear reason', async () => {
    const lines: string[] = [];
    await requireService('redis', {
      env: { SBX_REDIS_URL: 'http://127.0.0.1:1' },
      log: (l) => lines.push(l),
    });
    expect(lines[0]).toContain('must be a redis:// URL');
  });
});

describe('requireService(docker)', () => {
  it('resolves DOCKER_HOST when /_ping answers 200 on a unix socket', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sbx-rs-'));
    closers.push(() => rm(dir, { recursive: true, force: true }));
    const path = join(dir, 'docker.sock');
    await httpServer((s) => new Promise((resolve) => s.listen(path, resolve)), 200);
    const host = `unix://${path}`;
    await expect(requireService('docker', { env: { DOCKER_HOST: host } })).resolves.toBe(host);
  });

  it('resolves a tcp:// DOCKER_HOST, and skips when /_ping is not 200', async () => {
    const ok = await httpServer(
      (s) => new Promise((resolve) => s.listen(0, '127.0.0.1', resolve)),
      200,
    );
    const okHost = `tcp://127.0.0.1:${(ok.address() as net.AddressInfo).port}`;
    await expect(requireService('docker', { env: { DOCKER_HOST: okHost } })).resolves.toBe(okHost);

    const bad = await httpServer(
      (s) => new Promise((resolve) => s.listen(0, '127.0.0.1', resolve)),
      500,
    );
    const lines: string[] = [];
    const badHost = `tcp://127.0.0.1:${(bad.address() as net.AddressInfo).port}`;
    await expect(
      requireService('docker', { env: { DOCKER_HOST: badHost }, log: (l) => lines.push(l) }),
    ).resolves.toBeUndefined();
    expect(lines[0]).toContain('/_ping answered HTTP 500');
    expect(lines[0]).toContain('start-docker.sh');
  });

  it('skips when the socket does not exist, throws when required', async () => {
    const host = 'unix:///nonexistent/sbx/docker.sock';
    const lines: string[] = [];
    await expect(
      requireService('docker', { env: { DOCKER_HOST: host }, log: (l) => lines.push(l) }),
    ).resolves.toBeUndefined();
    expect(lines[0]).toMatch(/ENOENT/);
    await expect(
      requireService('docker', { env: { DOCKER_HOST: host, CI: 'true' }, log: () => {} }),
    ).rejects.toThrow(/required service unavailable.*docker/);
  });
});
