import { randomBytes } from 'node:crypto';
import { describeSandboxContract, requireService } from '@sbx/core/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { AioSandbox } from './aio-sandbox.js';
import { asClient, dockerFor, removeByPrefix, runPrefix } from './docker-test-support.js';
import { LocalContainerBackend } from './local-container-backend.js';
import { SESSION_RESET_NOTICE } from './shell-sessions.js';

/*
 * The real AIO image tier: the core sandbox contract and the session behaviours against an image
 * already loaded into the local Docker engine, e.g.
 *
 *   docker pull ghcr.io/agent-infra/sandbox:1.11.0   # on a machine with a registry
 *   SBX_AIO_IMAGE=ghcr.io/agent-infra/sandbox:1.11.0 npx vitest run packages/aio/src/aio-real-image.int.test.ts
 *
 * Nothing is pulled here: without SBX_AIO_IMAGE, or with the image absent, the tier is skipped
 * with the reason. The image listens on 8080 inside its container; the backend publishes it on
 * 127.0.0.1 (bridge networking).
 */
const image = process.env.SBX_AIO_IMAGE;
const apiKey = process.env.SBX_AIO_IMAGE_API_KEY;
const dockerHost = image ? await requireService('docker') : undefined;
const docker = dockerHost ? dockerFor(dockerHost) : undefined;

async function present(): Promise<boolean> {
  if (!image) {
    console.warn('[sbx] skipping the real AIO image tier: SBX_AIO_IMAGE is not set');
    return false;
  }
  if (!docker) return false;
  try {
    await docker.getImage(image).inspect();
    return true;
  } catch {
    console.warn(`[sbx] skipping the real AIO image tier: ${image} is not in the local engine`);
    return false;
  }
}

const ready = await present();
const prefix = runPrefix('real-aio');

function backend(): LocalContainerBackend {
  return new LocalContainerBackend({
    docker: asClient(docker!),
    image: image!,
    containerPrefix: prefix,
    network: 'bridge',
    bindHost: '127.0.0.1',
    sandboxHost: '127.0.0.1',
    basePort: 21000 + Math.floor(Math.random() * 10000),
    readyTimeoutMs: 120_000,
    ...(apiKey ? { apiKey, environment: { SANDBOX_API_KEY: apiKey } } : {}),
  });
}

async function started() {
  const b = backend();
  const info = await b.create({ sandboxId: `r${randomBytes(4).toString('hex')}` });
  const sandbox = new AioSandbox(info.sandboxId, {
    baseUrl: info.sandboxUrl,
    ...(apiKey ? { apiKey } : {}),
  });
  return { sandbox, cleanup: async () => (await sandbox.close(), await b.destroy(info)) };
}

if (ready) {
  describeSandboxContract(`AioSandbox (real image ${image})`, async () => {
    const { sandbox, cleanup } = await started();
    const workdir = `/tmp/sbx-${randomBytes(4).toString('hex')}`;
    await sandbox.executeCommand(`mkdir -p ${workdir}`);
    return { sandbox, workdir, cleanup };
  });
}

describe.skipIf(!ready)(`AioSandbox against the real image (${image ?? 'unset'})`, () => {
  afterAll(async () => {
    await removeByPrefix(docker!, prefix);
  });

  it('cd and export persist; 30 subagent scopes each run without a lost session', async () => {
    const { sandbox, cleanup } = await started();
    try {
      await sandbox.executeCommand('cd /tmp && export KEPT=yes');
      expect(await sandbox.executeCommand('echo "$(pwd) $KEPT"')).toBe('/tmp yes\n');
      const outs = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          sandbox.executeCommandInScope(`echo s${i}`, { scopeId: `s${i}` }),
        ),
      );
      outs.forEach((out, i) =>
        expect(out.replace(`${SESSION_RESET_NOTICE}\n`, '')).toBe(`s${i}\n`),
      );
    } finally {
      await cleanup();
    }
  });

  it('a command that outlives its limit does not wedge later calls', async () => {
    const { sandbox, cleanup } = await started();
    try {
      expect(await sandbox.executeCommand('sleep 60', { timeoutMs: 2_000 })).toMatch(/timed out/);
      expect(await sandbox.executeCommand('echo next')).toBe('next\n');
    } finally {
      await cleanup();
    }
  });
});
