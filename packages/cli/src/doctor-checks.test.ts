import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CliIo } from './cli-io.js';
import {
  DEFAULT_AIO_IMAGE,
  runDoctorChecks,
  type DoctorCheck,
  type DoctorOptions,
} from './doctor-checks.js';
import type { ConfinementProber } from './doctor-confinement-checks.js';
import { packageFinder } from './installed-packages.js';
import {
  closedPort,
  fakeInstall,
  memoryProviderClass,
  startFakeDocker,
  startFakeRedis,
  tempDir,
} from './test-support.js';

function ioFor(cwd: string, env: Record<string, string | undefined>): CliIo {
  return {
    stdout: new PassThrough(),
    stderr: new PassThrough(),
    stdin: new PassThrough(),
    env: { PATH: process.env.PATH, ...env },
    cwd,
  };
}

/** A host where confinement works, described (the real probes have tests of their own in @sbx/local). */
const confinedHost: ConfinementProber = async () => ({
  checks: [
    {
      id: 'confinement.bwrap',
      title: 'bubblewrap installed',
      status: 'ok',
      detail: 'bubblewrap 0.9.0 at /usr/bin/bwrap',
    },
    {
      id: 'confinement.userns',
      title: 'user namespaces usable',
      status: 'ok',
      detail: 'bwrap --unshare-user ran',
    },
    {
      id: 'confinement.seccomp',
      title: 'seccomp filters available',
      status: 'ok',
      detail: 'filter mode available',
    },
    {
      id: 'confinement.cgroups',
      title: 'cgroups for sandbox limits',
      status: 'ok',
      detail: 'v2 delegated',
    },
    {
      id: 'confinement.limits',
      title: 'limits in force',
      status: 'ok',
      detail: 'pids 512 (cgroup v2 pids)',
    },
  ],
  bwrap: { path: '/usr/bin/bwrap', version: '0.9.0' },
  cgroups: { layout: undefined, notes: [] },
  limits: [],
});

function byId(checks: readonly DoctorCheck[], id: string): DoctorCheck {
  const found = checks.find((c) => c.id === id);
  if (!found) throw new Error(`no check ${id} in ${checks.map((c) => c.id).join(', ')}`);
  return found;
}

describe('runDoctorChecks', () => {
  let project: { dir: string; remove: () => Promise<void> };
  const cleanups: (() => Promise<void>)[] = [];

  beforeEach(async () => {
    project = await tempDir('doctor');
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    await project.remove();
  });

  /** Options for a machine whose installed packages are exactly those in the temp project. */
  const options = (env: Record<string, string | undefined> = {}): DoctorOptions => ({
    io: ioFor(project.dir, { SBX_HOME: path.join(project.dir, 'home'), ...env }),
    findPackage: packageFinder([project.dir]),
    dockerEndpoint: { kind: 'socket', socketPath: path.join(project.dir, 'no-docker.sock') },
    kvmPath: path.join(project.dir, 'no-kvm'),
    platform: 'linux',
    arch: 'x64',
    nodeVersion: '20.19.0',
    confinementProbe: confinedHost,
  });

  it('passes on the local provider with its prerequisites, without Redis', async () => {
    await fakeInstall(project.dir, { '@sbx/local': '0.1.0' });
    const report = await runDoctorChecks(options());
    expect(report.ok).toBe(true);
    expect(report.provider).toBe('@sbx/local');
    expect(report.checks.map((c) => [c.id, c.status, c.required])).toEqual([
      ['node', 'ok', true],
      ['config', 'ok', true],
      ['provider', 'ok', true],
      ['local.shell', 'ok', true],
      ['local.data-dir', 'ok', true],
      ['confinement.bwrap', 'ok', false],
      ['confinement.userns', 'ok', false],
      ['confinement.seccomp', 'ok', false],
      ['confinement.cgroups', 'ok', false],
      ['confinement.limits', 'ok', false],
      ['ownership.redis', 'skip', false],
    ]);
    expect(byId(report.checks, 'confinement.limits').group).toBe('confinement');
    expect(byId(report.checks, 'local.data-dir').detail).toMatch(/home \(will be created\)$/);
  });

  it('fails an old Node.js with the fix', async () => {
    const report = await runDoctorChecks({ ...options(), nodeVersion: '18.20.0' });
    expect(report.ok).toBe(false);
    expect(byId(report.checks, 'node')).toMatchObject({
      status: 'fail',
      fix: 'install Node.js 20.19 or newer',
    });
  });

  it('checks Docker and the image for an installed @sbx/aio, without failing a local setup', async () => {
    await fakeInstall(project.dir, {
      '@sbx/local': '0.1.0',
      '@sbx/aio': '0.1.0',
      dockerode: '4.0.12',
    });
    const socketPath = path.join(project.dir, 'docker.sock');
    const docker = await startFakeDocker(socketPath, []);
    cleanups.push(docker.close);
    const report = await runDoctorChecks({
      ...options(),
      dockerEndpoint: { kind: 'socket', socketPath },
    });
    expect(byId(report.checks, 'aio.sdk')).toMatchObject({
      status: 'ok',
      detail: 'dockerode 4.0.12',
    });
    expect(byId(report.checks, 'aio.docker')).toMatchObject({
      status: 'ok',
      required: false,
      detail: `Docker 27.0.1 at unix://${socketPath}`,
    });
    expect(byId(report.checks, 'aio.image')).toMatchObject({
      status: 'fail',
      required: false,
      fix: `docker pull ${DEFAULT_AIO_IMAGE}   (or set sandbox.image to an image you have)`,
    });
    expect(docker.requests).toEqual(['/version', `/images/${DEFAULT_AIO_IMAGE}/json`]);
    expect(report.ok).toBe(true);
  });

  it('makes the configured provider decide: an unreachable Docker fails an @sbx/aio setup', async () => {
    await fakeInstall(project.dir, { '@sbx/aio': '0.1.0' });
    const aio = memoryProviderClass();
    const report = await runDoctorChecks({
      ...options(),
      config: { provider: '@sbx/aio' },
      importer: async (spec) => (spec === '@sbx/aio' ? { default: aio.Provider } : import(spec)),
    });
    expect(report.ok).toBe(false);
    expect(byId(report.checks, 'aio.sdk')).toMatchObject({
      status: 'fail',
      required: true,
      fix: 'npm install dockerode   (an optional peer dependency of @sbx/aio)',
    });
    const docker = byId(report.checks, 'aio.docker');
    expect(docker).toMatchObject({ status: 'fail', required: true });
    expect(docker.detail).toMatch(/no-docker\.sock: ENOENT$/);
    expect(docker.fix).toMatch(/start the Docker daemon/);
    expect(byId(report.checks, 'aio.image')).toMatchObject({ status: 'skip' });
    // The configured provider's rows come first.
    expect(report.checks[3]?.group).toBe('@sbx/aio');
  });

  it('skips the Docker checks when a provisioner starts the containers', async () => {
    await fakeInstall(project.dir, { '@sbx/aio': '0.1.0' });
    const config = path.join(project.dir, 'sbx.yaml');
    await writeFile(config, 'sandbox:\n  provisioner_url: http://127.0.0.1:9/\n');
    const report = await runDoctorChecks({ ...options(), config: { config } });
    expect(byId(report.checks, 'aio.docker').status).toBe('skip');
    expect(byId(report.checks, 'aio.image').status).toBe('skip');
  });

  it('reports missing vendor SDKs and API keys of installed remote providers, each with a fix', async () => {
    await fakeInstall(project.dir, {
      '@sbx/e2b': '0.1.0',
      '@sbx/tenki': '0.1.0',
      '@sbx/opensandbox': '0.1.0',
    });
    const report = await runDoctorChecks(options({ TENKI_AUTH_TOKEN: 'tk' }));
    expect(byId(report.checks, 'e2b.sdk')).toMatchObject({ status: 'fail', required: false });
    expect(byId(report.checks, 'e2b.api-key')).toMatchObject({
      status: 'fail',
      fix: 'export E2B_API_KEY=<your key>   (or set sandbox.e2b.api_key in the config file)',
    });
    expect(byId(report.checks, 'tenki.api-key')).toMatchObject({
      status: 'ok',
      detail: 'TENKI_AUTH_TOKEN is set',
    });
    expect(byId(report.checks, 'opensandbox.sdk').fix).toMatch(
      /^npm install @alibaba-group\/opensandbox/,
    );
    expect(byId(report.checks, 'opensandbox.api-key').status).toBe('fail');
    // Nothing of a secret is ever shown.
    expect(JSON.stringify(report)).not.toContain('tk"');
    expect(report.ok).toBe(true);
  });

  it('reads an API key from the provider block of the config', async () => {
    await fakeInstall(project.dir, { '@sbx/e2b': '0.1.0', e2b: '2.51.0' });
    const config = path.join(project.dir, 'sbx.yaml');
    await writeFile(config, 'sandbox:\n  e2b:\n    api_key: e2b_secret\n');
    const report = await runDoctorChecks({ ...options(), config: { config } });
    expect(byId(report.checks, 'e2b.sdk')).toMatchObject({ status: 'ok', detail: 'e2b 2.51.0' });
    expect(byId(report.checks, 'e2b.api-key')).toMatchObject({
      status: 'ok',
      detail: 'sandbox.e2b.api_key is set',
    });
    expect(JSON.stringify(report)).not.toContain('e2b_secret');
  });

  it('checks /dev/kvm for BoxLite', async () => {
    await fakeInstall(project.dir, { '@sbx/boxlite': '0.1.0' });
    const missing = await runDoctorChecks(options());
    expect(byId(missing.checks, 'boxlite.kvm')).toMatchObject({ status: 'fail' });
    expect(byId(missing.checks, 'boxlite.kvm').fix).toMatch(/modprobe kvm_intel or kvm_amd/);

    const kvm = path.join(project.dir, 'kvm');
    await writeFile(kvm, '');
    const present = await runDoctorChecks({ ...options(), kvmPath: kvm });
    expect(byId(present.checks, 'boxlite.kvm').status).toBe('ok');

    const mac = await runDoctorChecks({ ...options(), platform: 'darwin', arch: 'arm64' });
    expect(byId(mac.checks, 'boxlite.kvm').status).toBe('skip');
  });

  it('pings the Redis of SBX_REDIS_URL and shows the round trip, not required on memory', async () => {
    const redis = await startFakeRedis();
    cleanups.push(redis.close);
    const report = await runDoctorChecks(options({ SBX_REDIS_URL: redis.url }));
    const check = byId(report.checks, 'ownership.redis');
    expect(check).toMatchObject({ status: 'ok', required: false });
    expect(check.detail).toMatch(/from \$SBX_REDIS_URL: PONG in \d+\.\d ms$/);
    expect(redis.commands).toEqual([['PING']]);
  });

  it('requires Redis, @sbx/ownership-redis and ioredis when the ownership store is redis', async () => {
    const redis = await startFakeRedis({ password: 's3cret' });
    cleanups.push(redis.close);
    const url = redis.url.replace('redis://', 'redis://:s3cret@');
    const report = await runDoctorChecks(options({ SBX_OWNERSHIP_REDIS_URL: url }));
    expect(byId(report.checks, 'ownership.redis')).toMatchObject({ status: 'ok', required: true });
    expect(byId(report.checks, 'ownership.redis').detail).not.toContain('s3cret');
    expect(redis.commands).toEqual([['AUTH', 's3cret'], ['PING']]);
    expect(byId(report.checks, 'ownership-redis.package')).toMatchObject({
      status: 'fail',
      required: true,
      fix: 'npm install @sbx/ownership-redis ioredis',
    });
    expect(byId(report.checks, 'ownership-redis.sdk')).toMatchObject({
      status: 'fail',
      required: true,
    });
    expect(report.ok).toBe(false);
  });

  it('fails an unreachable Redis with a fix naming where the URL came from', async () => {
    const port = await closedPort();
    const report = await runDoctorChecks(options({ SBX_REDIS_URL: `redis://127.0.0.1:${port}` }));
    const check = byId(report.checks, 'ownership.redis');
    expect(check).toMatchObject({ status: 'fail', required: false });
    expect(check.detail).toMatch(/ECONNREFUSED$/);
    expect(check.fix).toBe(
      `start Redis there (e.g. redis-server --port ${port}), or point SBX_REDIS_URL at a running server`,
    );
  });

  it('reports an invalid config with its key paths and goes on with the defaults', async () => {
    await fakeInstall(project.dir, { '@sbx/local': '0.1.0' });
    const config = path.join(project.dir, 'sbx.yaml');
    await writeFile(config, 'sandbox:\n  allow_host_bash: maybe\n');
    const report = await runDoctorChecks({ ...options(), config: { config } });
    expect(byId(report.checks, 'config')).toMatchObject({
      status: 'fail',
      required: true,
      detail: 'sandbox.allow_host_bash: expected boolean, got string "maybe"',
    });
    expect(byId(report.checks, 'local.shell').status).toBe('ok');
    expect(report.ok).toBe(false);
  });

  it('fails a provider package that is not installed, with the install command', async () => {
    const report = await runDoctorChecks({ ...options(), config: { provider: '@acme/sandbox' } });
    expect(byId(report.checks, 'provider')).toMatchObject({
      status: 'fail',
      fix: 'npm install @acme/sandbox',
    });
    expect(report.ok).toBe(false);
  });

  it('shows a host that cannot confine, without failing a setup that does not demand it', async () => {
    await fakeInstall(project.dir, { '@sbx/local': '0.1.0' });
    const report = await runDoctorChecks({
      ...options(),
      confinementProbe: async (request) => ({
        ...(await confinedHost(request)),
        checks: [
          {
            id: 'confinement.userns',
            title: 'user namespaces usable',
            status: 'fail',
            detail: 'AppArmor restricts unprivileged user namespaces',
            fix: 'give bwrap an AppArmor profile',
          },
        ],
      }),
    });
    expect(byId(report.checks, 'confinement.userns')).toMatchObject({
      group: 'confinement',
      status: 'fail',
      required: false,
      fix: 'give bwrap an AppArmor profile',
    });
    expect(report.ok).toBe(true);
  });

  it('probes nothing of confinement when @sbx/local is neither installed nor configured', async () => {
    await fakeInstall(project.dir, { '@sbx/e2b': '0.1.0' });
    let probed = false;
    const report = await runDoctorChecks({
      ...options(),
      config: { provider: '@sbx/e2b' },
      confinementProbe: async (request) => {
        probed = true;
        return confinedHost(request);
      },
    });
    expect(probed).toBe(false);
    expect(report.checks.some((c) => c.group === 'confinement')).toBe(false);
  });

  it('fails the probes themselves as one row, not the whole report', async () => {
    await fakeInstall(project.dir, { '@sbx/local': '0.1.0' });
    const report = await runDoctorChecks({
      ...options(),
      confinementProbe: async () => {
        throw new Error('spawn EAGAIN');
      },
    });
    expect(byId(report.checks, 'confinement.bwrap')).toMatchObject({
      status: 'fail',
      detail: 'the probes failed: spawn EAGAIN',
    });
  });
});
