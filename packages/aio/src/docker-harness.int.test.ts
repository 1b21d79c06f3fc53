import { randomUUID } from 'node:crypto';
import net from 'node:net';
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import { requireService, servicesRequired } from '@sbx/core/testing';

// Proves the Docker test tier is wired end to end: the daemon from tools/services/start-docker.sh
// answers through DOCKER_HOST, runs the locally imported image (tools/images/build-images.sh) with
// host networking, and a server in the container is reachable on 127.0.0.1.
const IMAGE = 'sbx-test/busybox:1';
const dockerHost = await requireService('docker');

function dockerFor(address: string): Docker {
  if (address.startsWith('unix://')) return new Docker({ socketPath: address.slice(7) });
  const url = new URL(address.replace(/^tcp:/, 'http:'));
  return new Docker({ host: url.hostname, port: Number(url.port || 2375) });
}

async function imagePresent(docker: Docker): Promise<boolean> {
  try {
    await docker.getImage(IMAGE).inspect();
    return true;
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode !== 404) throw err;
    const reason = `${IMAGE} is missing; build it with \`bash tools/images/build-images.sh\``;
    if (servicesRequired()) throw new Error(`required test image unavailable: ${reason}`);
    console.warn(`[sbx] skipping docker integration tests: ${reason}`);
    return false;
  }
}

const docker = dockerHost ? dockerFor(dockerHost) : undefined;
const ready = docker ? await imagePresent(docker) : false;

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Polls until the server in the container answers; bounded so a broken container fails the test. */
async function fetchWhenUp(url: string, deadlineMs: number): Promise<Response> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    try {
      return await fetch(url, { signal: AbortSignal.timeout(2000) });
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

describe.skipIf(!ready)('docker test harness', () => {
  const d = docker!;
  // Every container of this run carries the label, so cleanup and the leak check find exactly them.
  const runLabel = `sbx.test.harness=${randomUUID()}`;
  const [labelKey, labelValue] = runLabel.split('=') as [string, string];

  const ours = () => d.listContainers({ all: true, filters: { label: [runLabel] } });

  afterAll(async () => {
    for (const info of await ours()) await d.getContainer(info.Id).remove({ force: true });
  });

  it('runs a host-network container whose server answers on 127.0.0.1', async () => {
    const port = await freePort();
    const token = randomUUID();
    const container = await d.createContainer({
      Image: IMAGE,
      Cmd: [
        '/bin/sh',
        '-c',
        `mkdir -p /www && echo "$TOKEN" > /www/index.html && exec httpd -f -p 127.0.0.1:${port} -h /www`,
      ],
      Env: [`TOKEN=${token}`],
      Labels: { [labelKey]: labelValue },
      HostConfig: { NetworkMode: 'host' },
    });
    try {
      await container.start();
      const res = await fetchWhenUp(`http://127.0.0.1:${port}/index.html`, 15_000);
      expect(res.status).toBe(200);
      // The token is fresh per run: only this container can have served it.
      expect((await res.text()).trim()).toBe(token);
      const state = await container.inspect();
      expect(state.State.Running).toBe(true);
      expect(state.HostConfig.NetworkMode).toBe('host');
    } finally {
      await container.remove({ force: true });
    }
  });

  it('leaves no container with this run label behind', async () => {
    await expect(ours()).resolves.toEqual([]);
  });
});
