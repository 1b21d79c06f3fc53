#!/usr/bin/env node
// Packaging check: what a user gets from `npm install @sbx/<pkg>` works, and nothing more comes
// along than they asked for.
//
//   node tools/scripts/pack-check.mjs        (after `npm run build`)
//
// It packs every workspace package, installs the tarballs into fresh consumer projects outside the
// repository, and checks:
//   manifest   vendor SDKs are optional peers, never dependencies (the peer-leak rule); every file
//              the `exports`/`main`/`module`/`types` fields name is inside the tarball
//   consumer   @sbx/core + @sbx/local load through ESM `import` and CJS `require`, a consumer .ts
//              and .cts type-check against the published types, and no vendor SDK was installed
//   providers  every package imports without its vendor SDK, and asking for the SDK raises
//              MissingDependencyError with the install hint (see PROVIDER_FACTORIES)
//   cli        the `sbx` executable of @sbx/cli runs from the installed tarball
//
// The rules are exported functions; tools/scripts/pack-check.test.ts proves they flag what they
// should (for instance e2b moved from peerDependencies to dependencies of @sbx/e2b).

import { execFile } from 'node:child_process';
import { mkdtemp, mkdir, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Vendor SDKs a provider package may only name as an optional peer. */
export const VENDOR_SDKS = [
  'dockerode',
  'e2b',
  'ioredis',
  '@boxlite-ai/boxlite',
  '@alibaba-group/opensandbox',
  // Agent frameworks of the adapter packages.
  'ai',
  '@langchain/core',
  'deepagents',
  '@openai/agents',
  // The provisioner's Kubernetes client.
  '@kubernetes/client-node',
];

/**
 * How to construct each provider in a consumer that lacks its vendor SDK. Each `construct(mod, core)`
 * receives the provider package's ESM namespace (and the consumer's @sbx/core) and must build the provider the way a user would
 * (and, if building is lazy, make the first call that needs the SDK); it is expected to reject with
 * MissingDependencyError. The function is serialised with `toString()` and run inside the consumer
 * project, so it may use only its argument.
 *
 * Until a package has an entry, the check falls back to asking the installed @sbx/core's
 * `loadOptionalDependency(sdk)` directly, which proves the SDK is absent and the error shape, but
 * not that the provider routes through it. Add an entry as soon as the provider exists, e.g.:
 *
 *   '@sbx/e2b': { sdk: 'e2b', construct: async (mod) => new mod.E2BSandboxProvider({ apiKey: 'x' }) },
 */
export const PROVIDER_FACTORIES = {
  '@sbx/aio': {
    sdk: 'dockerode',
    // The container backend loads dockerode on its first engine call: the first acquire.
    construct: async (mod, core) => {
      const provider = mod.createAioProvider({
        config: core.parseSandboxConfig({ use: '@sbx/aio' }),
      });
      try {
        await provider.acquire({ userId: 'u', threadId: 't' });
      } finally {
        await provider.shutdown().catch(() => {});
      }
    },
  },
  '@sbx/e2b': {
    sdk: 'e2b',
    construct: async (mod, core) => {
      const config = core.parseSandboxConfig({ use: '@sbx/e2b', e2b: { api_key: 'x' } });
      const provider = mod.createE2BProvider({ config });
      try {
        await provider.acquire({ userId: 'u', threadId: 't' });
      } finally {
        await provider.shutdown().catch(() => {});
      }
    },
  },
  '@sbx/boxlite': {
    sdk: '@boxlite-ai/boxlite',
    construct: async (mod, core) => {
      const config = core.parseSandboxConfig({ use: '@sbx/boxlite' });
      // A host with usable KVM, so the SDK load is what fails.
      const provider = mod.createBoxliteProvider({ config, fsAccess: async () => {} });
      try {
        await provider.acquire({ userId: 'u', threadId: 't' });
      } finally {
        await provider.shutdown().catch(() => {});
      }
    },
  },
  '@sbx/opensandbox': {
    sdk: '@alibaba-group/opensandbox',
    construct: async (mod, core) => {
      const config = core.parseSandboxConfig({
        use: '@sbx/opensandbox',
        opensandbox: { domain: '127.0.0.1:9' },
      });
      const provider = mod.createOpenSandboxProvider({ config });
      try {
        await provider.acquire({ userId: 'u', threadId: 't' });
      } finally {
        await provider.shutdown().catch(() => {});
      }
    },
  },
  '@sbx/langchain': {
    sdk: '@langchain/core',
    // The tools load @langchain/core on first use: building them is the first use.
    construct: async (mod) => mod.createSbxTools({ provider: {}, threadId: 't' }),
  },
  '@sbx/openai-agents': {
    sdk: '@openai/agents',
    construct: async (mod) => mod.createSbxTools({ provider: {}, threadId: 't' }),
  },
  '@sbx/provisioner': {
    sdk: '@kubernetes/client-node',
    // Connecting is the first use of the client.
    construct: async (mod) => mod.connectKubeApi({ kubeconfigPath: '/nonexistent', waitMs: 0 }),
  },
  '@sbx/ownership-redis': {
    sdk: 'ioredis',
    // Fails while loading the SDK, before any connection is attempted.
    construct: async (mod) => mod.createRedisOwnershipStore({ url: 'redis://127.0.0.1:6379' }),
  },
};

// ---------------------------------------------------------------------------------------------
// Rules (pure or file-system only; each returns a list of human-readable violations)

/**
 * The peer-leak rule: a vendor SDK in `dependencies` (or `optionalDependencies`) is installed for
 * every user of the package, whichever provider they use; as a non-optional peer npm 7+ installs it
 * too. Either defeats the point of optional providers.
 */
export function findPeerLeaks(manifest, vendorSdks = VENDOR_SDKS) {
  const problems = [];
  for (const field of [
    'dependencies',
    'optionalDependencies',
    'bundleDependencies',
    'bundledDependencies',
  ]) {
    const deps = manifest[field];
    const names = Array.isArray(deps) ? deps : Object.keys(deps ?? {});
    for (const name of names) {
      if (vendorSdks.includes(name)) {
        problems.push(
          `${manifest.name}: vendor SDK "${name}" is in ${field}; it must be an optional peerDependency`,
        );
      }
    }
  }
  for (const name of Object.keys(manifest.peerDependencies ?? {})) {
    if (vendorSdks.includes(name) && manifest.peerDependenciesMeta?.[name]?.optional !== true) {
      problems.push(
        `${manifest.name}: peer "${name}" is not marked optional in peerDependenciesMeta; npm would install it`,
      );
    }
  }
  return problems;
}

/** Every file path a manifest points consumers at (exports conditions, main, module, types). */
export function exportTargets(manifest) {
  const targets = new Set();
  const walk = (node, condition) => {
    if (typeof node === 'string') {
      // The source condition is for this repository's own tooling; published consumers never set it.
      if (condition !== '@sbx/source' && node.startsWith('./')) targets.add(node.slice(2));
    } else if (node && typeof node === 'object') {
      for (const [key, value] of Object.entries(node)) walk(value, key);
    }
  };
  walk(manifest.exports, undefined);
  for (const field of ['main', 'module', 'types', 'typings']) {
    if (typeof manifest[field] === 'string') targets.add(manifest[field].replace(/^\.\//, ''));
  }
  return [...targets].sort();
}

/** Export targets missing from the tarball's file list (`files` are paths relative to package/). */
export function findMissingExportTargets(manifest, files) {
  const present = new Set(files);
  return exportTargets(manifest)
    .filter((target) => !present.has(target))
    .map(
      (target) =>
        `${manifest.name}: "${target}" is referenced by package.json but not in the tarball`,
    );
}

/** Vendor SDKs installed anywhere under `dir/node_modules` (nested installs included). */
export async function findInstalledVendorSdks(dir, vendorSdks = VENDOR_SDKS) {
  const found = [];
  const visit = async (nodeModules) => {
    let entries;
    try {
      entries = await readdir(nodeModules, { withFileTypes: true });
    } catch (err) {
      if (err.code === 'ENOENT') return;
      throw err;
    }
    for (const entry of entries) {
      if (!entry.isDirectory() && !entry.isSymbolicLink()) continue;
      if (entry.name.startsWith('.')) continue;
      const names = entry.name.startsWith('@')
        ? (await readdir(path.join(nodeModules, entry.name))).map((n) => `${entry.name}/${n}`)
        : [entry.name];
      for (const name of names) {
        const pkgDir = path.join(nodeModules, name);
        if (vendorSdks.includes(name)) found.push(path.relative(dir, pkgDir));
        await visit(path.join(pkgDir, 'node_modules'));
      }
    }
  };
  await visit(path.join(dir, 'node_modules'));
  return found.sort();
}

// ---------------------------------------------------------------------------------------------
// Packing and installing

/** `npm pack` of one directory into `dest`; resolves to { filename, files, manifest }. */
export async function packDirectory(dir, dest) {
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', dest], {
    cwd: dir,
    maxBuffer: 64 * 1024 * 1024,
  });
  const [info] = JSON.parse(stdout);
  const tarball = path.join(dest, info.filename);
  return {
    tarball,
    files: info.files.map((f) => f.path),
    manifest: await readPackedManifest(tarball),
  };
}

/** The package.json as published, read from inside the tarball. */
export async function readPackedManifest(tarball) {
  const { stdout } = await run('tar', ['-xzOf', tarball, 'package/package.json'], {
    maxBuffer: 16 * 1024 * 1024,
  });
  return JSON.parse(stdout);
}

/** `npm pack` of every workspace package in one npm run: name -> { tarball, files, manifest }. */
export async function packWorkspaces(dest) {
  const { stdout } = await run(
    'npm',
    ['pack', '--workspaces', '--json', '--pack-destination', dest],
    { cwd: REPO_ROOT, maxBuffer: 64 * 1024 * 1024 },
  );
  const packed = new Map();
  for (const info of JSON.parse(stdout)) {
    const tarball = path.join(dest, info.filename);
    packed.set(info.name, {
      tarball,
      files: info.files.map((f) => f.path),
      manifest: await readPackedManifest(tarball),
    });
  }
  return packed;
}

async function workspacePackages() {
  const dirs = (await readdir(path.join(REPO_ROOT, 'packages'), { withFileTypes: true }))
    .filter((e) => e.isDirectory())
    .map((e) => path.join(REPO_ROOT, 'packages', e.name));
  const out = [];
  for (const dir of dirs.sort()) {
    try {
      out.push({
        dir,
        manifest: JSON.parse(await readFile(path.join(dir, 'package.json'), 'utf8')),
      });
    } catch (err) {
      if (err.code !== 'ENOENT') throw err;
    }
  }
  return out;
}

/**
 * `npm install` into a consumer. Offline first: the repository's own install warmed the cache, and
 * offline keeps the check fast and independent of the registry; online only if something is missing.
 */
async function npmInstall(cwd, specs, extraArgs = []) {
  const base = ['install', '--no-audit', '--no-fund', '--loglevel=error', ...extraArgs, ...specs];
  try {
    await run('npm', [...base, '--offline'], { cwd, maxBuffer: 64 * 1024 * 1024 });
    return 'offline';
  } catch (offlineErr) {
    try {
      await run('npm', base, { cwd, maxBuffer: 64 * 1024 * 1024 });
      return 'online';
    } catch (err) {
      err.message += `\n(offline attempt failed first: ${String(offlineErr.stderr ?? offlineErr.message).trim()})`;
      throw err;
    }
  }
}

async function newConsumer(root, name) {
  const dir = path.join(root, name);
  await mkdir(dir, { recursive: true });
  await writeFile(
    path.join(dir, 'package.json'),
    JSON.stringify(
      { name: `sbx-${name}`, version: '0.0.0', private: true, type: 'module' },
      null,
      2,
    ),
  );
  return dir;
}

async function nodeIn(cwd, file) {
  return run(process.execPath, [file], { cwd, maxBuffer: 16 * 1024 * 1024 });
}

// ---------------------------------------------------------------------------------------------
// Checks run inside consumer projects

const LOAD_CHECK = `
import { createRequire } from 'node:module';
import assert from 'node:assert/strict';
const require = createRequire(import.meta.url);
const esmCore = await import('@sbx/core');
const cjsCore = require('@sbx/core');
for (const [kind, core] of [['import', esmCore], ['require', cjsCore]]) {
  assert.equal(typeof core.SbxError, 'function', kind + ' @sbx/core: SbxError');
  assert.equal(typeof core.loadOptionalDependency, 'function', kind + ' @sbx/core: loadOptionalDependency');
  const err = new core.MissingDependencyError('e2b', 'pack-check');
  assert.equal(err.code, 'MISSING_DEPENDENCY', kind + ' @sbx/core: error code');
}
assert.match(import.meta.resolve('@sbx/core'), /dist\\/index\\.js$/);
assert.match(require.resolve('@sbx/core'), /dist[\\\\/]index\\.cjs$/);
const esmLocal = await import('@sbx/local');
const cjsLocal = require('@sbx/local');
assert.equal(typeof esmLocal, 'object');
assert.equal(typeof cjsLocal, 'object');
assert.match(import.meta.resolve('@sbx/local'), /dist\\/index\\.js$/);
assert.match(require.resolve('@sbx/local'), /dist[\\\\/]index\\.cjs$/);
console.log('ok');
`;

const CONSUMER_TS = `import { MissingDependencyError, SbxError, isSbxError, loadOptionalDependency } from '@sbx/core';
import * as local from '@sbx/local';

const err: SbxError = new MissingDependencyError('e2b', 'consumer');
export const code: string = err.code;
export const hint: string | undefined =
  err instanceof MissingDependencyError ? err.installCommand : undefined;
// @ts-expect-error the published types are precise: \`code\` is a string, not \`any\`
export const wrong: number = err.code;
export const guarded: boolean = isSbxError(err);
export const pending: Promise<{ version: string }> = loadOptionalDependency<{ version: string }>(
  'some-sdk',
  'consumer',
);
export const localModule: object = local;
`;

const CONSUMER_CTS = `import core = require('@sbx/core');
import local = require('@sbx/local');

export const err: core.SbxError = new core.MissingDependencyError('e2b', 'consumer');
// @ts-expect-error the published types are precise: \`code\` is a string, not \`any\`
export const wrong: number = err.code;
export const localModule: object = local;
`;

/**
 * Script for the consumer: each package must load through import and require without any vendor
 * SDK; for a package with an SDK peer, constructing the provider (or, until it has a hook,
 * `loadOptionalDependency`) must reject with MissingDependencyError and the install hint.
 */
function providersCheck(packages) {
  const entries = packages.map(
    ({ name, sdk, construct }) =>
      `[${JSON.stringify(name)}, ${JSON.stringify(sdk ?? null)}, ${construct ? construct.toString() : 'undefined'}]`,
  );
  return `
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const core = await import('@sbx/core');
const cjsCore = require('@sbx/core');
const packages = [${entries.join(',\n')}];
const failures = [];
function expectMissing(label, err, sdk) {
  if (!err) return failures.push(label + ': resolved, expected MissingDependencyError');
  if (err.code !== 'MISSING_DEPENDENCY')
    return failures.push(label + ': expected code MISSING_DEPENDENCY, got ' + err.code + ': ' + err.message);
  if (err.installCommand !== 'npm install ' + sdk)
    return failures.push(label + ': installCommand is ' + JSON.stringify(err.installCommand));
}
const firstLine = (e) => String(e && e.message).split('\\n')[0];
for (const [name, sdk, construct] of packages) {
  let mod;
  try { mod = await import(name); } catch (e) { failures.push(name + ': import failed: ' + firstLine(e)); continue; }
  try { require(name); } catch (e) { failures.push(name + ': require failed: ' + firstLine(e)); continue; }
  if (!sdk) { console.log('loads     ' + name); continue; }
  try { require.resolve(sdk); failures.push(name + ': ' + sdk + ' is resolvable in the consumer'); continue; } catch {}
  let caught;
  try {
    await (construct ? construct(mod, core) : core.loadOptionalDependency(sdk, name));
  } catch (e) { caught = e; }
  expectMissing(name + (construct ? ' construct' : ' loadOptionalDependency (import)'), caught, sdk);
  caught = undefined;
  try { await cjsCore.loadOptionalDependency(sdk, name); } catch (e) { caught = e; }
  expectMissing(name + ' loadOptionalDependency (require)', caught, sdk);
  console.log((construct ? 'construct ' : 'fallback  ') + name + ' (' + sdk + ')');
}
if (failures.length) { console.error(failures.join('\\n')); process.exit(1); }
`;
}

// ---------------------------------------------------------------------------------------------
// Driver

class Report {
  results = [];
  async step(title, fn) {
    const started = Date.now();
    try {
      const problems = (await fn()) ?? [];
      this.results.push({ title, problems, ms: Date.now() - started });
    } catch (err) {
      // execFile errors already carry stderr in their message.
      const detail = [err.message, err.stdout].filter((s) => s && String(s).trim()).join('\n');
      this.results.push({ title, problems: [detail], ms: Date.now() - started });
    }
    const last = this.results.at(-1);
    const mark = last.problems.length ? 'FAIL' : 'ok  ';
    console.log(`[pack-check] ${mark} ${title} (${(last.ms / 1000).toFixed(1)}s)`);
    for (const p of last.problems)
      console.log(`             - ${String(p).split('\n').join('\n               ')}`);
    return last.problems.length === 0;
  }
  get failed() {
    return this.results.filter((r) => r.problems.length > 0);
  }
}

export async function main({ keep = false } = {}) {
  const started = Date.now();
  const report = new Report();
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'sbx-pack-check-'));
  const tarballs = path.join(tmp, 'tarballs');
  await mkdir(tarballs);
  const packed = new Map();
  try {
    const workspace = await workspacePackages();

    await report.step(`build output present for ${workspace.length} packages`, async () => {
      const missing = [];
      for (const { dir, manifest } of workspace) {
        try {
          await stat(path.join(dir, 'dist'));
        } catch {
          missing.push(`${manifest.name}: no dist/; run \`npm run build\` first`);
        }
      }
      return missing;
    });
    if (report.failed.length) return finish(report, started, tmp, keep);

    await report.step('npm pack every package', async () => {
      for (const [name, p] of await packWorkspaces(tarballs)) packed.set(name, p);
      return workspace
        .filter(({ manifest }) => !packed.has(manifest.name))
        .map(({ manifest }) => `${manifest.name}: not packed`);
    });
    if (report.failed.length) return finish(report, started, tmp, keep);

    await report.step('manifests: vendor SDKs only as optional peers (peer-leak rule)', async () =>
      [...packed.values()].flatMap((p) => findPeerLeaks(p.manifest)),
    );
    await report.step('manifests: every exported file is in the tarball', async () =>
      [...packed.values()].flatMap((p) => findMissingExportTargets(p.manifest, p.files)),
    );

    const tgz = (name) => {
      const p = packed.get(name);
      if (!p) throw new Error(`${name} was not packed`);
      return p.tarball;
    };
    const rootManifest = JSON.parse(await readFile(path.join(REPO_ROOT, 'package.json'), 'utf8'));
    const typesNode = `@types/node@${rootManifest.devDependencies?.['@types/node'] ?? '^20'}`;

    const basic = await newConsumer(tmp, 'consumer');
    const installed = await report.step(
      'consumer: install @sbx/core + @sbx/local tarballs',
      async () => {
        const mode = await npmInstall(basic, [tgz('@sbx/core'), tgz('@sbx/local'), typesNode]);
        console.log(`[pack-check]      installed ${mode}`);
      },
    );
    if (installed) {
      await report.step(
        'consumer: ESM import and CJS require of @sbx/core and @sbx/local',
        async () => {
          await writeFile(path.join(basic, 'load.mjs'), LOAD_CHECK);
          await nodeIn(basic, 'load.mjs');
        },
      );
      await report.step(
        'consumer: .ts and .cts type-check against the published types',
        async () => {
          await writeFile(path.join(basic, 'consumer.ts'), CONSUMER_TS);
          await writeFile(path.join(basic, 'consumer-cjs.cts'), CONSUMER_CTS);
          await writeFile(
            path.join(basic, 'tsconfig.json'),
            JSON.stringify(
              {
                compilerOptions: {
                  target: 'ES2022',
                  module: 'NodeNext',
                  moduleResolution: 'NodeNext',
                  strict: true,
                  noEmit: true,
                  skipLibCheck: true,
                  types: ['node'],
                },
                files: ['consumer.ts', 'consumer-cjs.cts'],
              },
              null,
              2,
            ),
          );
          const tsc = path.join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
          await run(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: basic });
        },
      );
      await report.step('consumer: no vendor SDK installed', async () =>
        (await findInstalledVendorSdks(basic)).map(
          (p) => `vendor SDK installed in the consumer: ${p}`,
        ),
      );
    }

    const providerConsumer = await newConsumer(tmp, 'providers');
    // --legacy-peer-deps: never install peers, optional or not, exactly the situation of a user who
    // has not installed the SDK.
    const providersInstalled = await report.step(
      'providers: install every package without peers',
      async () => {
        const mode = await npmInstall(
          providerConsumer,
          [...packed.values()].map((p) => p.tarball),
          ['--legacy-peer-deps'],
        );
        console.log(`[pack-check]      installed ${mode}`);
        return (await findInstalledVendorSdks(providerConsumer)).map(
          (p) => `vendor SDK installed although no peer was requested: ${p}`,
        );
      },
    );
    if (providersInstalled) {
      await report.step(
        'providers: each imports without its SDK; the SDK raises MissingDependencyError',
        async () => {
          const checks = [];
          for (const { manifest } of workspace) {
            const sdks = Object.keys(manifest.peerDependencies ?? {}).filter((n) =>
              VENDOR_SDKS.includes(n),
            );
            const hook = PROVIDER_FACTORIES[manifest.name];
            for (const sdk of sdks) {
              checks.push({
                name: manifest.name,
                sdk,
                construct: hook?.sdk === sdk ? hook.construct : undefined,
              });
            }
            // Packages without an SDK still have to load cleanly in a consumer.
            if (sdks.length === 0) checks.push({ name: manifest.name, sdk: undefined });
          }
          const problems = Object.entries(PROVIDER_FACTORIES)
            .filter(([name, { sdk }]) => !checks.some((c) => c.name === name && c.sdk === sdk))
            .map(([name, { sdk }]) => `PROVIDER_FACTORIES: ${name} has no optional peer "${sdk}"`);
          await writeFile(path.join(providerConsumer, 'providers.mjs'), providersCheck(checks));
          try {
            const { stdout } = await nodeIn(providerConsumer, 'providers.mjs');
            for (const line of stdout.trim().split('\n'))
              if (line) console.log(`[pack-check]      ${line}`);
          } catch (err) {
            for (const line of String(err.stdout ?? '')
              .trim()
              .split('\n')) {
              if (line) console.log(`[pack-check]      ${line}`);
            }
            problems.push(
              ...String(err.stderr || err.message)
                .trim()
                .split('\n'),
            );
          }
          return problems;
        },
      );
    }
    const cli = packed.get('@sbx/cli');
    if (providersInstalled && cli) {
      // A bin must run from the installed tarball: its shebang, its ESM entry, and its own
      // dependencies resolved from the consumer's node_modules.
      await report.step('cli: the installed sbx executable runs', async () => {
        const bin = path.join(providerConsumer, 'node_modules', '.bin', 'sbx');
        const { stdout } = await run(bin, ['--version'], { cwd: providerConsumer });
        return stdout.trim() === cli.manifest.version
          ? []
          : [`sbx --version printed "${stdout.trim()}", expected ${cli.manifest.version}`];
      });
    }
    return finish(report, started, tmp, keep);
  } catch (err) {
    await finish(report, started, tmp, keep);
    throw err;
  }
}

async function finish(report, started, tmp, keep) {
  if (keep) console.log(`[pack-check] kept ${tmp}`);
  else await rm(tmp, { recursive: true, force: true });
  const failed = report.failed.length;
  const passed = report.results.length - failed;
  console.log(
    `[pack-check] ${failed ? 'FAILED' : 'passed'}: ${passed} checks passed, ${failed} failed (${((Date.now() - started) / 1000).toFixed(1)}s)`,
  );
  return failed === 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  main({ keep: process.argv.includes('--keep') }).then(
    (ok) => process.exit(ok ? 0 : 1),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
