import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { requireService, servicesRequired } from '@sbx/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeStandin } from './testing/kube-standin.js';

// The container image built by tools/images/build-images.sh, run on real Docker (host network,
// 127.0.0.1 only) against the Kubernetes stand-in: what a Deployment would run.

const IMAGE = 'sbx-test/provisioner:1';
const run = promisify(execFile);
const dockerHost = await requireService('docker');
const docker = (...args: string[]) =>
  run('docker', args, { env: { ...process.env, DOCKER_HOST: dockerHost } });

async function imagePresent(): Promise<boolean> {
  try {
    await docker('image', 'inspect', IMAGE);
    return true;
  } catch {
    const reason = `${IMAGE} is missing; build it with \`bash tools/images/build-images.sh\``;
    if (servicesRequired()) throw new Error(`required test image unavailable: ${reason}`);
    console.warn(`[sbx] skipping the provisioner image test: ${reason}`);
    return false;
  }
}
const ready = dockerHost ? await imagePresent() : false;

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe.skipIf(!ready)('the provisioner container image (real Docker)', () => {
  let standin: KubeStandin;
  let dir: string;
  const name = `sbx-prov-test-${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    standin = await KubeStandin.start();
    dir = await mkdtemp(path.join(tmpdir(), 'sbx-prov-image-'));
    await standin.writeKubeconfig(dir);
    // The image runs as uid 65532: the mounted kubeconfig must be readable by it.
    await chmod(dir, 0o755);
    await chmod(path.join(dir, 'kubeconfig'), 0o644);
  });
  afterAll(async () => {
    await docker('rm', '-f', name).catch(() => undefined);
    await standin?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('serves the API as uid 65532, creates through the stand-in, and exits 0 on SIGTERM', async () => {
    const port = await freePort();
    await docker(
      'run',
      '-d',
      '--name',
      name,
      '--network',
      'host',
      '-v',
      `${dir}:/kube:ro`,
      '-e',
      'KUBECONFIG_PATH=/kube/kubeconfig',
      '-e',
      'PROVISIONER_HOST=127.0.0.1',
      '-e',
      `PROVISIONER_PORT=${port}`,
      '-e',
      'PROVISIONER_API_KEY=image-key',
      '-e',
      'NODE_HOST=127.0.0.1',
      '-e',
      'K8S_NAMESPACE=image-test',
      IMAGE,
    );
    const base = `http://127.0.0.1:${port}`;
    await expect
      .poll(async () => (await fetch(`${base}/health`).catch(() => undefined))?.status, {
        timeout: 20_000,
      })
      .toBe(200);
    const res = await fetch(`${base}/api/sandboxes`, {
      method: 'POST',
      headers: { 'x-api-key': 'image-key', 'content-type': 'application/json' },
      body: JSON.stringify({ sandbox_id: 'img1', thread_id: 't1' }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { sandbox_url: string; status: string };
    expect(body.status).toBe('Running');
    expect((await fetch(`${body.sandbox_url}/v1/sandbox`)).status).toBe(200);
    expect(standin.pods('image-test').map((p) => p.metadata!.name)).toEqual(['sandbox-img1']);
    const { stdout: user } = await docker('inspect', '-f', '{{.Config.User}}', name);
    expect(user.trim()).toBe('65532:65532');

    await docker('stop', '-t', '10', name);
    const { stdout: exit } = await docker('inspect', '-f', '{{.State.ExitCode}}', name);
    expect(exit.trim()).toBe('0');
    const { stderr, stdout } = await docker('logs', name);
    const lines = `${stdout}${stderr}`
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { msg: string });
    expect(lines.map((l) => l.msg)).toEqual(
      expect.arrayContaining(['provisioner listening', 'stopping']),
    );
  }, 60_000);
});
