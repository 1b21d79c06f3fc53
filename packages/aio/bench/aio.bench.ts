/**
 * AioSandboxProvider acquire latency on the real engine, with the stand-in image in host-network
 * mode and a memory ownership store:
 * - reuse: the thread's sandbox is active (health check + take);
 * - warm reclaim: released and parked (health check + take + a fresh client);
 * - cold create: directories, container create + start, readiness, take;
 * and, side by side in the same run, the floor under a cold create: a bare `docker run -d` of the
 * same image (CLI) and the same create + start through the engine API, each followed by the same
 * readiness probe. The overhead column is cold create minus the API floor.
 *
 * Run: `npm run bench -w @sbx/aio` with DOCKER_HOST set (source tools/services/start-docker.sh) and
 * the test image built (bash tools/images/build-images.sh). Writes bench/results/aio.{json,md}.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseSandboxConfig } from '@sbx/core';
import { summarize, timed, writeBenchResults } from '../../../tools/bench/bench-kit.js';
import type { LatencyRow as Row } from '../../../tools/bench/bench-kit.js';
import { AioSandboxProvider } from '../src/aio-sandbox-provider.js';
import { waitForSandboxReady } from '../src/readiness.js';
import {
  DEFAULT_CONTAINER_RESOURCES,
  DEFAULT_SECURITY_PROFILE,
  profileHostConfig,
} from '../src/container-profile.js';

const run = promisify(execFile);
const IMAGE = process.env.SBX_BENCH_AIO_IMAGE ?? 'sbx-test/aio-standin:1';
const N_REUSE = Number(process.env.SBX_BENCH_REUSE ?? 200);
const N_RECLAIM = Number(process.env.SBX_BENCH_RECLAIM ?? 30);
const N_COLD = Number(process.env.SBX_BENCH_COLD ?? 12);

async function docker(...args: string[]): Promise<string> {
  return (await run('docker', args)).stdout.trim();
}

async function main(): Promise<void> {
  await docker('image', 'inspect', IMAGE).catch(() => {
    throw new Error(
      `${IMAGE} is missing: source tools/services/start-docker.sh, then bash tools/images/build-images.sh`,
    );
  });
  const tag = randomBytes(3).toString('hex');
  const prefix = `sbxbench-${tag}`;
  const basePort = 20000 + Math.floor(Math.random() * 10000);
  const baseDir = await mkdtemp(join(tmpdir(), 'sbx-aio-bench-'));
  const provider = new AioSandboxProvider({
    config: parseSandboxConfig(
      {
        use: '@sbx/aio',
        image: IMAGE,
        container_prefix: prefix,
        port: basePort,
        base_dir: baseDir,
        replicas: N_COLD + 10,
        idle_timeout: 0,
        ownership: { type: 'memory' },
        aio: { network: 'host', stop_grace_seconds: 2 },
      },
      { env: {} },
    ),
    logger: { debug() {}, info() {}, warn() {}, error: (m) => console.error(m) },
  });
  await provider.ready();
  const rows: Row[] = [];
  try {
    // Warm-up: one create, so image layers and the engine's caches are hot for every path.
    const warm = await provider.acquire({ userId: 'bench', threadId: 'warm-up' });
    await provider.release(warm);

    const cold: number[] = [];
    for (let i = 0; i < N_COLD; i++) {
      const [ms] = await timed(() => provider.acquire({ userId: 'bench', threadId: `cold-${i}` }));
      cold.push(ms);
    }
    const reuse: number[] = [];
    for (let i = 0; i < N_REUSE; i++) {
      const [ms] = await timed(() => provider.acquire({ userId: 'bench', threadId: 'cold-0' }));
      reuse.push(ms);
    }
    const reclaim: number[] = [];
    for (let i = 0; i < N_RECLAIM; i++) {
      await provider.release(provider.sandboxIdFor({ userId: 'bench', threadId: 'cold-1' }));
      const [ms] = await timed(() => provider.acquire({ userId: 'bench', threadId: 'cold-1' }));
      reclaim.push(ms);
    }
    rows.push(summarize('reuse (active)', reuse));
    rows.push(summarize('warm reclaim', reclaim));
    rows.push(summarize('cold create', cold));
  } finally {
    await provider.shutdown();
  }

  // The floor: the same image started without the provider, then the same readiness probe.
  const cli: number[] = [];
  const api: number[] = [];
  const hardened: number[] = [];
  const plain: number[] = [];
  const names: string[] = [];
  try {
    const Docker = (await import('dockerode')).default;
    const engine = new Docker();
    for (let i = 0; i < N_COLD; i++) {
      const port = basePort + 500 + i;
      const name = `${prefix}-bare-${i}`;
      names.push(name);
      const [ms] = await timed(async () => {
        await docker(
          'run',
          '-d',
          '--rm',
          '--network',
          'host',
          '--security-opt',
          'seccomp=unconfined',
          '-e',
          `SBX_AIO_PORT=${port}`,
          '--name',
          name,
          IMAGE,
        );
        if (!(await waitForSandboxReady(`http://127.0.0.1:${port}`, { timeoutMs: 60_000 }))) {
          throw new Error(`bare container ${name} never became ready`);
        }
      });
      cli.push(ms);
    }
    for (let i = 0; i < N_COLD; i++) {
      const port = basePort + 700 + i;
      const name = `${prefix}-api-${i}`;
      names.push(name);
      const [ms] = await timed(async () => {
        const c = await engine.createContainer({
          name,
          Image: IMAGE,
          Env: [`SBX_AIO_PORT=${port}`],
          HostConfig: {
            AutoRemove: true,
            NetworkMode: 'host',
            SecurityOpt: ['seccomp=unconfined'],
          },
        });
        await c.start();
        if (!(await waitForSandboxReady(`http://127.0.0.1:${port}`, { timeoutMs: 60_000 }))) {
          throw new Error(`bare container ${name} never became ready`);
        }
      });
      api.push(ms);
    }
    // The hardened profile's cost: the same engine-API cold start with sbx's default limits and
    // profile and with none (the reference's seccomp=unconfined), interleaved so both see the
    // same engine state.
    for (let i = 0; i < N_COLD; i++) {
      for (const hardenedRun of [true, false]) {
        const port = basePort + 800 + i * 2 + (hardenedRun ? 0 : 1);
        const name = `${prefix}-${hardenedRun ? 'hard' : 'plain'}-${i}`;
        names.push(name);
        const [ms] = await timed(async () => {
          const c = await engine.createContainer({
            name,
            Image: IMAGE,
            Env: [`SBX_AIO_PORT=${port}`],
            HostConfig: {
              AutoRemove: true,
              NetworkMode: 'host',
              ...(hardenedRun
                ? profileHostConfig(DEFAULT_CONTAINER_RESOURCES, DEFAULT_SECURITY_PROFILE)
                : { SecurityOpt: ['seccomp=unconfined'] }),
            },
          });
          await c.start();
          if (!(await waitForSandboxReady(`http://127.0.0.1:${port}`, { timeoutMs: 60_000 }))) {
            throw new Error(`container ${name} never became ready`);
          }
        });
        (hardenedRun ? hardened : plain).push(ms);
      }
    }
  } finally {
    if (names.length > 0) await docker('rm', '-f', ...names).catch(() => '');
    await rm(baseDir, { recursive: true, force: true });
  }
  rows.push(summarize('bare `docker run -d` + readiness', cli));
  rows.push(summarize('bare engine API create+start + readiness', api));
  rows.push(summarize('engine API cold start, hardened profile + limits', hardened));
  rows.push(summarize('engine API cold start, unconfined, no limits', plain));

  const coldRow = rows.find((r) => r.path === 'cold create')!;
  const apiRow = rows.find((r) => r.path.startsWith('bare engine API'))!;
  const cliRow = rows.find((r) => r.path.startsWith('bare `docker run'))!;
  const overhead = {
    p50OverApiMs: Math.round((coldRow.p50Ms - apiRow.p50Ms) * 100) / 100,
    p95OverApiMs: Math.round((coldRow.p95Ms - apiRow.p95Ms) * 100) / 100,
    p50OverCliMs: Math.round((coldRow.p50Ms - cliRow.p50Ms) * 100) / 100,
  };
  const hardRow = rows.find((r) => r.path.includes('hardened profile'))!;
  const plainRow = rows.find((r) => r.path.includes('unconfined, no limits'))!;
  // Target: the profile adds at most 10% to sbx's cold create (the engine-level difference over
  // the provider's cold-create p50); the engine-only ratio is reported beside it.
  const hardenedRatio = {
    engineP50Ratio: Math.round((hardRow.p50Ms / plainRow.p50Ms) * 1000) / 1000,
    engineP95Ratio: Math.round((hardRow.p95Ms / plainRow.p95Ms) * 1000) / 1000,
    addedToColdCreateP50:
      Math.round(((hardRow.p50Ms - plainRow.p50Ms) / coldRow.p50Ms) * 1000) / 1000,
    target: 0.1,
  };
  const engineVersion = await docker('version', '--format', '{{.Server.Version}}').catch(() => '?');
  const report = {
    benchmark: 'aio',
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    docker: engineVersion,
    image: IMAGE,
    date: new Date().toISOString(),
    rows,
    coldCreateOverhead: overhead,
    hardenedProfile: hardenedRatio,
  };
  const table = [
    '| path | n | p50 (ms) | p95 (ms) | mean (ms) | min (ms) | max (ms) |',
    '|---|---:|---:|---:|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${r.path} | ${r.samples} | ${r.p50Ms} | ${r.p95Ms} | ${r.meanMs} | ${r.minMs} | ${r.maxMs} |`,
    ),
  ].join('\n');
  const markdown = [
    '# @sbx/aio provider acquire latency',
    '',
    `Node ${process.version}, ${report.platform}, Docker ${engineVersion}, image \`${IMAGE}\` in host-network mode, memory ownership store, ${report.date}.`,
    '',
    table,
    '',
    `Cold create over the bare engine-API start + readiness: p50 ${overhead.p50OverApiMs} ms, p95 ${overhead.p95OverApiMs} ms (over \`docker run\` via the CLI: p50 ${overhead.p50OverCliMs} ms).`,
    `Hardened profile (default seccomp, cap-drop ALL, no-new-privileges, memory/CPU/pids limits): adds ${Math.round(hardenedRatio.addedToColdCreateP50 * 1000) / 10}% to the cold-create p50 (target ≤ 10%); engine start alone p50 ×${hardenedRatio.engineP50Ratio}, p95 ×${hardenedRatio.engineP95Ratio} over unconfined without limits.`,
    'Reuse and reclaim each include a backend health check (one engine inspect) and the ownership take; cold create adds the thread directories, the replica check and the readiness probe (first retry after 100 ms, as in the bare rows).',
    '',
  ].join('\n');
  await writeBenchResults('aio', report, markdown);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
