#!/usr/bin/env node
// Publishing check: the packages install and run from a registry, as users will get them.
//
//   node tools/scripts/registry-check.mjs [--keep]      (after `npm run build`; npm run check:registry)
//
// 1. starts a private registry (verdaccio) on 127.0.0.1 with a free port and a temporary storage
//    directory; it serves @sbx/* only and proxies nothing (no uplinks);
// 2. creates a registry user through the registry's API and publishes every built workspace package
//    with `npm publish` from its directory;
// 3. in a clean consumer project whose .npmrc sends only the @sbx scope to that registry (every
//    third-party dependency, zod included, comes from the normal npm registry), installs
//    @sbx/core and @sbx/local, and @sbx/cli when it exists, and checks by integrity that every
//    installed @sbx package is the tarball the private registry serves;
// 4. runs the demo (`npx sbx demo`, else `runDemo()` of @sbx/local) and checks its key lines.
//
// The registry is stopped however the check ends (also on Ctrl-C); --keep keeps the temporary
// directory (registry storage, consumer) for inspection.

import { spawn, execFile } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const require = createRequire(import.meta.url);

/** Lines the demo must print: each proves one property end to end. */
export const DEMO_EXPECTATIONS = [
  ['the script ran in the sandbox', 'Hello, sandbox!'],
  ['commands start in the virtual workspace', '/mnt/user-data/workspace'],
  ['host secrets stay out of the sandbox', 'DEMO_API_KEY is not visible'],
  ['request secrets are redacted in output', 'token=[redacted]'],
  ['read-before-write refuses a stale edit', 'str_replace refused'],
  ['the deterministic sandbox id', 'sandbox: local:demo-user:demo-thread'],
];

/** Problems with the demo's output, one per missing expectation. */
export function checkDemoOutput(output) {
  return DEMO_EXPECTATIONS.filter(([, text]) => !output.includes(text)).map(
    ([what, text]) => `demo output lacks "${text}" (${what})`,
  );
}

/**
 * The registry configuration: the @sbx scope only, open to anonymous reads and publishes (the
 * registry lives for one check on loopback), no uplinks, so nothing else can be served from it.
 */
export function registryConfig() {
  return [
    'storage: ./storage',
    'auth:',
    '  htpasswd:',
    '    file: ./htpasswd',
    '    max_users: 10',
    'uplinks: {}',
    'packages:',
    "  '@sbx/*':",
    '    access: $all',
    '    publish: $all',
    '    unpublish: $all',
    'web:',
    '  enable: false',
    'middlewares:',
    '  audit:',
    '    enabled: false',
    'log:',
    '  type: stdout',
    '  format: json',
    '  level: error',
    '',
  ].join('\n');
}

/**
 * `@sbx/*` entries of a consumer's package-lock that are not the tarballs the private registry
 * serves, compared by integrity (a lockfile need not record where a tarball came from, but a
 * package of the same name and version from another registry has another integrity).
 * `published` maps package name to the integrity the registry reports for it.
 */
export function foreignSbxPackages(lock, published) {
  const problems = [];
  for (const [where, entry] of Object.entries(lock.packages ?? {})) {
    const match = /(?:^|\/)node_modules\/(@sbx\/[^/]+)$/.exec(where);
    if (!match) continue;
    const expected = published.get(match[1]);
    if (!expected) problems.push(`${where}: ${match[1]} was not published to the private registry`);
    else if (entry.integrity !== expected)
      problems.push(`${where}: integrity ${entry.integrity} is not the published ${expected}`);
  }
  return problems;
}

/** name -> dist.integrity of `version`, as the registry serves it. */
async function publishedIntegrities(url, packages) {
  const out = new Map();
  for (const { name, version } of packages) {
    const response = await fetch(new URL(name.replace('/', '%2f'), url));
    if (!response.ok) throw new Error(`${name}: the registry answered HTTP ${response.status}`);
    const integrity = (await response.json()).versions?.[version]?.dist?.integrity;
    if (typeof integrity !== 'string')
      throw new Error(`${name}@${version}: no integrity in the registry`);
    out.set(name, integrity);
  }
  return out;
}

// The registry runs in a child process so that stopping it is a kill, whatever state it is in.
// It listens on port 0 (the kernel picks a free port: no probe-then-bind race) and exits when its
// stdin closes, so it cannot outlive a parent that died without cleaning up.
const SERVER_SCRIPT = `
const verdaccio = require(process.env.SBX_VERDACCIO);
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
verdaccio.runServer(process.env.SBX_REGISTRY_CONFIG).then((server) => {
  server.listen(0, '127.0.0.1', () => {
    console.log('SBX_REGISTRY_PORT=' + server.address().port);
  });
}, (err) => { console.error(err); process.exit(1); });
`;

/** Starts the registry; resolves to { url, stop } once it listens. */
export async function startRegistry(dir, { timeoutMs = 60_000 } = {}) {
  await mkdir(path.join(dir, 'storage'), { recursive: true });
  const config = path.join(dir, 'config.yaml');
  await writeFile(config, registryConfig());
  const server = path.join(dir, 'server.cjs');
  await writeFile(server, SERVER_SCRIPT);
  const child = spawn(process.execPath, [server], {
    cwd: dir,
    env: {
      ...process.env,
      SBX_VERDACCIO: require.resolve('verdaccio'),
      SBX_REGISTRY_CONFIG: config,
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const stderr = [];
  child.stderr.on('data', (chunk) => stderr.push(chunk));
  const exited = once(child, 'exit');
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    }
  };
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`the registry did not start within ${timeoutMs / 1000}s`));
    }, timeoutMs);
    const lines = createInterface({ input: child.stdout });
    lines.on('line', (line) => {
      const match = /^SBX_REGISTRY_PORT=(\d+)$/.exec(line);
      if (match) {
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(
        new Error(
          `the registry exited during startup (${signal ?? `status ${code}`}): ${Buffer.concat(stderr).toString().trim()}`,
        ),
      );
    });
  }).catch(async (err) => {
    await stop();
    throw err;
  });
  return { url: `http://127.0.0.1:${port}/`, stop };
}

/** Registers a user through the registry's CouchDB-style API; resolves to its auth token. */
export async function createRegistryUser(url, name = 'sbx-check') {
  const password = `pw-${process.pid}-${Date.now()}`;
  const response = await fetch(new URL(`-/user/org.couchdb.user:${name}`, url), {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name, password, type: 'user', roles: [] }),
  });
  const body = await response.json().catch(() => ({}));
  if (!response.ok || typeof body.token !== 'string') {
    throw new Error(
      `creating registry user failed: HTTP ${response.status} ${JSON.stringify(body)}`,
    );
  }
  return body.token;
}

/** Workspace packages in dependency-independent order; each must have been built. */
async function builtPackages() {
  const root = path.join(REPO_ROOT, 'packages');
  const out = [];
  for (const entry of (await readdir(root, { withFileTypes: true })).sort((a, b) =>
    a.name.localeCompare(b.name),
  )) {
    if (!entry.isDirectory()) continue;
    const dir = path.join(root, entry.name);
    let manifest;
    try {
      manifest = JSON.parse(await readFile(path.join(dir, 'package.json'), 'utf8'));
    } catch (err) {
      if (err.code === 'ENOENT') continue;
      throw err;
    }
    if (manifest.private) continue;
    const built = await stat(path.join(dir, 'dist')).then(
      () => true,
      () => false,
    );
    out.push({ dir, name: manifest.name, version: manifest.version, built });
  }
  return out;
}

function npm(args, options) {
  return run('npm', args, { maxBuffer: 64 * 1024 * 1024, ...options });
}

function log(message) {
  console.log(`[registry-check] ${message}`);
}

export async function main({ keep = false } = {}) {
  const started = Date.now();
  const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1)}s`;
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'sbx-registry-check-'));
  let registry;
  const onSignal = (signal) => {
    // Stop the registry before dying; the exit status says which signal ended the check.
    void (async () => {
      await registry?.stop();
      if (!keep) await rm(tmp, { recursive: true, force: true });
    })().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const packages = await builtPackages();
    const unbuilt = packages.filter((p) => !p.built).map((p) => p.name);
    if (unbuilt.length > 0)
      throw new Error(`not built: ${unbuilt.join(', ')}; run \`npm run build\` first`);

    registry = await startRegistry(path.join(tmp, 'registry'));
    log(`registry on ${registry.url} (${elapsed()})`);
    const token = await createRegistryUser(registry.url);
    const host = new URL(registry.url).host;
    const publishRc = path.join(tmp, 'publish.npmrc');
    await writeFile(publishRc, `registry=${registry.url}\n//${host}/:_authToken=${token}\n`);

    for (const pkg of packages) {
      await npm(
        [
          'publish',
          '--registry',
          registry.url,
          '--userconfig',
          publishRc,
          '--ignore-scripts',
          '--no-git-checks',
          '--loglevel=error',
        ],
        { cwd: pkg.dir },
      );
      log(`published ${pkg.name}@${pkg.version}`);
    }

    const consumer = path.join(tmp, 'consumer');
    await mkdir(consumer);
    await writeFile(
      path.join(consumer, 'package.json'),
      JSON.stringify(
        { name: 'sbx-registry-consumer', version: '0.0.0', private: true, type: 'module' },
        null,
        2,
      ),
    );
    // Only the scope goes to the private registry; everything else resolves as for any user.
    await writeFile(path.join(consumer, '.npmrc'), `@sbx:registry=${registry.url}\n`);
    const wanted = ['@sbx/core', '@sbx/local'];
    const withCli = packages.some((p) => p.name === '@sbx/cli');
    if (withCli) wanted.push('@sbx/cli');
    await npm(['install', '--no-audit', '--no-fund', '--loglevel=error', ...wanted], {
      cwd: consumer,
    });
    log(`installed ${wanted.join(' ')} (${elapsed()})`);
    const lock = JSON.parse(await readFile(path.join(consumer, 'package-lock.json'), 'utf8'));
    const integrities = await publishedIntegrities(registry.url, packages);
    const foreign = foreignSbxPackages(lock, integrities);
    if (foreign.length > 0)
      throw new Error(`packages not from the private registry:\n${foreign.join('\n')}`);
    const sbxInstalled = Object.keys(lock.packages ?? {})
      .filter((k) => /node_modules\/@sbx\//.test(k))
      .map((k) => k.replace(/^.*node_modules\//, ''));
    if (!wanted.every((name) => sbxInstalled.includes(name))) {
      throw new Error(
        `installed @sbx packages ${sbxInstalled.join(', ')} lack one of ${wanted.join(', ')}`,
      );
    }
    log(`every @sbx package is the published tarball: ${sbxInstalled.join(', ')}`);

    const demo = withCli
      ? await run('npx', ['--no', 'sbx', 'demo'], { cwd: consumer, maxBuffer: 16 * 1024 * 1024 })
      : await run(
          process.execPath,
          ['--input-type=module', '-e', "const m = await import('@sbx/local'); await m.runDemo();"],
          { cwd: consumer, maxBuffer: 16 * 1024 * 1024 },
        );
    const problems = checkDemoOutput(demo.stdout);
    if (problems.length > 0) {
      throw new Error(`${problems.join('\n')}\n--- demo output ---\n${demo.stdout}${demo.stderr}`);
    }
    log(`${withCli ? 'npx sbx demo' : '@sbx/local runDemo()'} printed every expected line`);
    if (withCli) {
      // The documented form for running the CLI without a dependency on it: naming the package,
      // because a bare `npx sbx` elsewhere resolves an unrelated public package called `sbx`.
      const named = await run('npx', ['--no', '-p', '@sbx/cli', 'sbx', '--version'], {
        cwd: consumer,
      });
      const version = named.stdout.trim();
      if (!/^\d+\.\d+\.\d+/.test(version)) {
        throw new Error(`npx -p @sbx/cli sbx --version printed ${JSON.stringify(named.stdout)}`);
      }
      log(`npx -p @sbx/cli sbx --version printed ${version}`);
    }
    log(`passed (${elapsed()})`);
    return true;
  } catch (err) {
    const detail = [err.message, err.stdout, err.stderr].filter((s) => s && String(s).trim());
    console.error(`[registry-check] FAILED (${elapsed()}): ${detail.join('\n')}`);
    return false;
  } finally {
    await registry?.stop();
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
    if (keep) log(`kept ${tmp}`);
    else await rm(tmp, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  main({ keep: process.argv.includes('--keep') }).then((ok) => process.exit(ok ? 0 : 1));
}
