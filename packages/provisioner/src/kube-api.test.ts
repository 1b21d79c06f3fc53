import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ManualClock } from '@sbx/core/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { connectKubeApi, waitForKubeconfig } from './kube-api.js';
import { KubeStandin } from './testing/kube-standin.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'sbx-kubeconfig-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('kubeconfig loading (§9.5.63)', () => {
  it('a directory where the kubeconfig should be is an error naming it, at once', async () => {
    await mkdir(path.join(dir, 'config'));
    await expect(waitForKubeconfig(path.join(dir, 'config'), { waitMs: 60_000 })).rejects.toThrow(
      /is a directory/,
    );
    await expect(
      connectKubeApi({ kubeconfigPath: path.join(dir, 'config'), waitMs: 0 }),
    ).rejects.toThrow(/directory/);
  });

  it('waits for the file to appear (a Secret mounted late), polling on the clock', async () => {
    const clock = new ManualClock();
    const file = path.join(dir, 'config');
    const waiting = waitForKubeconfig(file, { waitMs: 30_000, pollMs: 2_000, clock });
    await clock.advance(2_000);
    await writeFile(file, '{}');
    await clock.advance(2_000);
    await expect(waiting).resolves.toBe(true);
  });

  it('gives up after the wait and reports the missing file (then the in-cluster config is used)', async () => {
    const clock = new ManualClock();
    const waiting = waitForKubeconfig(path.join(dir, 'absent'), {
      waitMs: 4_000,
      pollMs: 2_000,
      clock,
    });
    await clock.advance(2_000);
    await clock.advance(2_000);
    await expect(waiting).resolves.toBe(false);
  });

  it('falls back to the in-cluster configuration, which fails clearly outside a cluster', async () => {
    await expect(
      connectKubeApi({ kubeconfigPath: path.join(dir, 'absent'), waitMs: 0, env: {} }),
    ).rejects.toThrow(/no kubeconfig at .*absent and no in-cluster configuration/);
  });

  it('a kubeconfig that does not parse is an error naming the file', async () => {
    await writeFile(path.join(dir, 'config'), ':\n  - [');
    await expect(
      connectKubeApi({ kubeconfigPath: path.join(dir, 'config'), waitMs: 0 }),
    ).rejects.toThrow(/cannot load kubeconfig/);
  });

  it('a file loads, and K8S_API_SERVER replaces its server', async () => {
    const standin = await KubeStandin.start();
    try {
      const file = await standin.writeKubeconfig(dir);
      const kube = await connectKubeApi({ kubeconfigPath: file, waitMs: 0 });
      await expect(kube.readNamespace('nope')).rejects.toMatchObject({
        status: 404,
        reason: 'NotFound',
      });
      // A kubeconfig naming a dead server, redirected to the stand-in.
      await writeFile(
        file,
        (await readFile(file, 'utf8')).replace(standin.url, 'https://127.0.0.1:9'),
      );
      const redirected = await connectKubeApi({
        kubeconfigPath: file,
        waitMs: 0,
        apiServer: standin.url,
      });
      await expect(redirected.readNamespace('nope')).rejects.toMatchObject({ status: 404 });
    } finally {
      await standin.close();
    }
  });

  it('an unreachable API server is a KubeApiError with status 0', async () => {
    const standin = await KubeStandin.start();
    const file = await standin.writeKubeconfig(dir);
    await standin.close();
    const kube = await connectKubeApi({ kubeconfigPath: file, waitMs: 0 });
    await expect(kube.readNamespace('x')).rejects.toMatchObject({ code: 'KUBE_API', status: 0 });
  });
});
