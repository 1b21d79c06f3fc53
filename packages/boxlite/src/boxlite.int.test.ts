import { access } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { parseSandboxConfig } from '@sbx/core';
import { describe, expect, it } from 'vitest';
import { DEFAULT_BOXLITE_IMAGE } from './boxlite-config.js';
import { BoxliteProvider } from './boxlite-provider.js';
import type { SdkModule } from './sdk-runtime.js';
import { BOXLITE_SDK_PACKAGE } from './sdk-runtime.js';
import { assertVirtualizationAvailable } from './virtualization.js';

/*
 * The real BoxLite runtime. Runs only where micro-VMs can start and need nothing from a registry:
 * `/dev/kvm` usable, the SDK installed, and an image available offline, either
 * - `SBX_BOXLITE_ROOTFS`: a local OCI layout directory (`scripts/busybox-oci-layout.sh` builds one
 *   from the host's busybox), or
 * - `SBX_BOXLITE_IMAGE` (default python:3.12-slim) already in the image cache of
 *   `SBX_BOXLITE_HOME` (default ~/.boxlite).
 * Everywhere else (CI included: no image can be fetched there) it is skipped with the reason.
 */

interface Readiness {
  skip: string | undefined;
  section: Record<string, unknown>;
}

async function readiness(): Promise<Readiness> {
  const section: Record<string, unknown> = {};
  try {
    await assertVirtualizationAvailable();
  } catch (error) {
    return { skip: (error as Error).message, section };
  }
  let mod: SdkModule;
  try {
    mod = (await import(BOXLITE_SDK_PACKAGE)) as SdkModule;
  } catch (error) {
    return {
      skip: `${BOXLITE_SDK_PACKAGE} is not installed (${(error as Error).message})`,
      section,
    };
  }
  const home = process.env.SBX_BOXLITE_HOME;
  const rootfs = process.env.SBX_BOXLITE_ROOTFS;
  const boxlite: Record<string, unknown> = {};
  if (home) boxlite.home_dir = home;
  if (rootfs) {
    try {
      await access(path.join(rootfs, 'oci-layout'));
    } catch {
      return { skip: `SBX_BOXLITE_ROOTFS=${rootfs} is not an OCI layout directory`, section };
    }
    boxlite.rootfs_path = rootfs;
    return { skip: undefined, section: { boxlite } };
  }
  const image = process.env.SBX_BOXLITE_IMAGE ?? DEFAULT_BOXLITE_IMAGE;
  // Opening a runtime creates its home; a probe must not leave one behind where there was none.
  const cacheDir = path.join(home ?? path.join(homedir(), '.boxlite'), 'images');
  try {
    await access(cacheDir);
  } catch {
    return { skip: `no BoxLite image cache at ${cacheDir}; no image can be fetched here`, section };
  }
  try {
    const runtime = (home
      ? new mod.JsBoxlite({ homeDir: home })
      : mod.JsBoxlite.withDefaultConfig()) as unknown as {
      images: { list(): Promise<{ reference: string; repository: string; tag: string }[]> };
      close(): void;
    };
    const cached = await runtime.images.list();
    runtime.close();
    const wanted = image.includes(':') ? image : `${image}:latest`;
    const hit = cached.some(
      (i) =>
        i.reference === image || i.reference === wanted || `${i.repository}:${i.tag}` === wanted,
    );
    if (!hit) {
      return {
        skip: `image ${image} is not in the local BoxLite cache and cannot be fetched here (set SBX_BOXLITE_ROOTFS to an OCI layout to run)`,
        section,
      };
    }
  } catch (error) {
    return { skip: `the BoxLite runtime cannot start here: ${(error as Error).message}`, section };
  }
  return { skip: undefined, section: { image, boxlite } };
}

const ready = await readiness();
if (ready.skip) console.log(`[boxlite.int] skipped: ${ready.skip}`);

describe('BoxLite on the real runtime', () => {
  it.skipIf(ready.skip !== undefined)(
    'runs a turn, parks the VM, reclaims it for the next turn and stops it at shutdown',
    async () => {
      const provider = new BoxliteProvider({
        config: parseSandboxConfig(
          { use: '@sbx/boxlite', idle_timeout: 0, ...ready.section },
          { env: {}, cwd: tmpdir() },
        ),
      });
      try {
        const id = await provider.acquire({ userId: 'int', threadId: `t-${process.pid}` });
        const sandbox = provider.get(id)!;
        expect(await sandbox.executeCommand('echo hello-from-vm')).toBe('hello-from-vm\n');
        expect(await sandbox.executeCommand('echo out; echo err >&2; exit 2')).toBe(
          'out\n\nStd Error:\nerr\n\nExit Code: 2',
        );
        const bytes = new Uint8Array(200_000).map((_, i) => (i * 31) % 256);
        await sandbox.updateFile('/mnt/user-data/outputs/blob.bin', bytes);
        expect(Buffer.from(await sandbox.downloadFile('/mnt/user-data/outputs/blob.bin'))).toEqual(
          Buffer.from(bytes),
        );
        await sandbox.writeFile('/mnt/user-data/workspace/notes.txt', 'alpha\nneedle\n');
        expect((await sandbox.grep('/mnt/user-data/workspace', 'NEEDLE')).matches).toEqual([
          { path: '/mnt/user-data/workspace/notes.txt', lineNumber: 2, line: 'needle' },
        ]);
        expect((await sandbox.glob('/mnt/user-data', '*.txt')).paths).toEqual([
          '/mnt/user-data/workspace/notes.txt',
        ]);
        await provider.release(id);
        expect(await provider.acquire({ userId: 'int', threadId: `t-${process.pid}` })).toBe(id);
        expect(provider.get(id)).toBe(sandbox);
        expect(await provider.get(id)!.readFile('/mnt/user-data/workspace/notes.txt')).toBe(
          'alpha\nneedle\n',
        );
      } finally {
        await provider.shutdown();
      }
    },
    300_000,
  );
});
