import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  REPO_ROOT,
  VENDOR_SDKS,
  exportTargets,
  findInstalledVendorSdks,
  findMissingExportTargets,
  findPeerLeaks,
  packDirectory,
} from './pack-check.mjs';

interface Manifest {
  name: string;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  [key: string]: unknown;
}

let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(path.join(tmpdir(), 'sbx-pack-check-test-'));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

async function realManifest(dir: string): Promise<Manifest> {
  return JSON.parse(await readFile(path.join(REPO_ROOT, 'packages', dir, 'package.json'), 'utf8'));
}

/** A packable copy of a package: its real package.json (edited) and stub build output. */
async function fixturePackage(name: string, manifest: Manifest): Promise<string> {
  const dir = path.join(tmp, name);
  await mkdir(path.join(dir, 'dist'), { recursive: true });
  await writeFile(path.join(dir, 'package.json'), JSON.stringify(manifest, null, 2));
  for (const file of ['index.js', 'index.cjs', 'index.d.ts', 'index.d.cts']) {
    await writeFile(path.join(dir, 'dist', file), 'export {};\n');
  }
  return dir;
}

describe('peer-leak rule', () => {
  it('flags @sbx/e2b once e2b moves from peerDependencies to dependencies (packed tarball)', async () => {
    const leaked = await realManifest('e2b');
    expect(leaked.peerDependencies?.e2b).toBeDefined();
    leaked.dependencies = { ...leaked.dependencies, e2b: leaked.peerDependencies!.e2b! };
    delete leaked.peerDependencies!.e2b;
    delete leaked.peerDependenciesMeta!.e2b;

    const dest = path.join(tmp, 'tarballs-leak');
    await mkdir(dest);
    const packed = await packDirectory(await fixturePackage('e2b-leaked', leaked), dest);

    expect(packed.manifest.dependencies.e2b).toBeDefined();
    expect(findPeerLeaks(packed.manifest)).toEqual([
      '@sbx/e2b: vendor SDK "e2b" is in dependencies; it must be an optional peerDependency',
    ]);
    // The fixture is otherwise sound, so the leak is the only thing the checker reports.
    expect(findMissingExportTargets(packed.manifest, packed.files)).toEqual([]);
  });

  it('passes the real @sbx/e2b manifest, packed the same way', async () => {
    const dest = path.join(tmp, 'tarballs-real');
    await mkdir(dest);
    const packed = await packDirectory(
      await fixturePackage('e2b-real', await realManifest('e2b')),
      dest,
    );
    expect(findPeerLeaks(packed.manifest)).toEqual([]);
  });

  it('flags a vendor peer that is not marked optional (npm 7+ would install it)', async () => {
    const manifest = await realManifest('aio');
    manifest.peerDependenciesMeta = {};
    expect(findPeerLeaks(manifest)).toEqual([
      '@sbx/aio: peer "dockerode" is not marked optional in peerDependenciesMeta; npm would install it',
    ]);
  });

  it('flags optionalDependencies and bundled dependencies too', () => {
    expect(
      findPeerLeaks({
        name: 'x',
        optionalDependencies: { ioredis: '^5' },
        bundleDependencies: ['dockerode'],
      }),
    ).toHaveLength(2);
  });

  it('holds for every workspace package as it stands', async () => {
    const dirs = [
      'core',
      'local',
      'aio',
      'e2b',
      'boxlite',
      'tenki',
      'opensandbox',
      'ownership-redis',
      'authz',
      'egress',
    ];
    for (const dir of dirs) expect(findPeerLeaks(await realManifest(dir))).toEqual([]);
  });
});

describe('export targets rule', () => {
  it('lists the conditional targets but not the repository-only source condition', async () => {
    const targets = exportTargets(await realManifest('core'));
    expect(targets).toContain('dist/index.cjs');
    expect(targets).toContain('dist/testing.d.cts');
    expect(targets.some((t: string) => t.startsWith('src/'))).toBe(false);
  });

  it('flags a referenced file the tarball lacks', async () => {
    const manifest = await realManifest('local');
    const files = ['package.json', 'dist/index.js', 'dist/index.d.ts', 'dist/index.d.cts'];
    expect(findMissingExportTargets(manifest, files)).toEqual([
      '@sbx/local: "dist/index.cjs" is referenced by package.json but not in the tarball',
    ]);
  });
});

describe('installed vendor SDK scan', () => {
  it('finds SDKs at the top level and nested, scoped or not', async () => {
    const consumer = path.join(tmp, 'consumer-scan');
    const nm = path.join(consumer, 'node_modules');
    for (const dir of [
      '@sbx/core',
      'e2b',
      'lru-cache/node_modules/@boxlite-ai/boxlite',
      '@scope/dockerode-like',
    ]) {
      await mkdir(path.join(nm, dir), { recursive: true });
    }
    expect(await findInstalledVendorSdks(consumer)).toEqual([
      'node_modules/e2b',
      'node_modules/lru-cache/node_modules/@boxlite-ai/boxlite',
    ]);
  });

  it('finds nothing in a consumer without SDKs, or without node_modules', async () => {
    const consumer = path.join(tmp, 'consumer-clean');
    await mkdir(path.join(consumer, 'node_modules', '@sbx', 'core'), { recursive: true });
    await cp(
      path.join(REPO_ROOT, 'packages', 'core', 'package.json'),
      path.join(consumer, 'node_modules', '@sbx', 'core', 'package.json'),
    );
    expect(await findInstalledVendorSdks(consumer)).toEqual([]);
    expect(await findInstalledVendorSdks(path.join(tmp, 'nowhere'))).toEqual([]);
    expect(VENDOR_SDKS).toContain('e2b');
  });
});
