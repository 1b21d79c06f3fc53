import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import type Docker from 'dockerode';

/**
 * Test support for the multi-instance tests: the worker bundle, a private redis-server (the tests
 * flush it, which must never hit a shared one), a minimal Redis admin client, and an RPC handle
 * on one worker process.
 */

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, '../../../..');

/**
 * Bundles `provider-worker.ts` with the workspace packages compiled from source into the
 * repository's git-ignored `tmp/`, so everything left outside the bundle (npm dependencies, the
 * lazily loaded drivers dockerode and ioredis) resolves from the repository's node_modules.
 */
export async function buildWorker(): Promise<{ file: string; dispose(): Promise<void> }> {
  const { build } = await import('tsup');
  await mkdir(path.join(repoRoot, 'tmp'), { recursive: true });
  const outDir = await mkdtemp(path.join(repoRoot, 'tmp', 'aio-worker-'));
  await build({
    entry: { worker: path.join(here, 'provider-worker.ts') },
    outDir,
    format: ['esm'],
    platform: 'node',
    target: 'node20',
    // Only the workspace packages are bundled (from source); npm dependencies load at run time.
    noExternal: [/^@sbx\//],
    external: [/^(?!@sbx\/)[^./]/],
    dts: false,
    sourcemap: false,
    clean: false,
    silent: true,
    config: false,
    shims: true,
    splitting: false,
    tsconfig: path.join(here, '../../tsconfig.json'),
    esbuildOptions(options) {
      options.conditions = ['@sbx/source'];
    },
  });
  return {
    file: path.join(outDir, 'worker.js'),
    dispose: () => rm(outDir, { recursive: true, force: true }),
  };
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

type RedisReply = string | number | null;

/** One command over a fresh connection (RESP2: simple, error, integer and bulk replies). */
export function redisCommand(port: number, ...args: string[]): Promise<RedisReply> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    let buffer = Buffer.alloc(0);
    const done = (fn: () => void) => {
      socket.destroy();
      fn();
    };
    socket.setTimeout(30_000, () => done(() => reject(new Error('redis command timed out'))));
    socket.once('error', (err) => done(() => reject(err)));
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      const end = buffer.indexOf('\r\n');
      if (end === -1) return;
      const head = buffer.subarray(0, end).toString('utf8');
      const kind = head[0];
      const rest = head.slice(1);
      if (kind === '+') return done(() => resolve(rest));
      if (kind === '-') return done(() => reject(new Error(rest)));
      if (kind === ':') return done(() => resolve(Number(rest)));
      if (kind === '$') {
        const len = Number(rest);
        if (len < 0) return done(() => resolve(null));
        if (buffer.length < end + 2 + len + 2) return;
        const body = buffer.subarray(end + 2, end + 2 + len).toString('utf8');
        return done(() => resolve(body));
      }
      done(() => reject(new Error(`unexpected redis reply ${head}`)));
    });
    socket.once('connect', () => {
      socket.write(
        `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`,
      );
    });
  });
}

export interface PrivateRedis {
  url: string;
  port: number;
  command(...args: string[]): Promise<RedisReply>;
  stop(): Promise<void>;
}

/** A throw-away redis-server on 127.0.0.1, or undefined when none can be started. */
export async function startPrivateRedis(): Promise<PrivateRedis | undefined> {
  const port = await freePort();
  let child: ChildProcess;
  try {
    child = spawn(
      'redis-server',
      ['--bind', '127.0.0.1', '--port', String(port), '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' },
    );
  } catch {
    return undefined;
  }
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let failed = false;
  child.once('error', () => {
    failed = true;
  });
  for (let i = 0; i < 200; i++) {
    if (failed) return undefined;
    try {
      if ((await redisCommand(port, 'PING')) === 'PONG') {
        return {
          url: `redis://127.0.0.1:${port}`,
          port,
          command: (...args) => redisCommand(port, ...args),
          stop: async () => {
            child.kill('SIGTERM');
            await exited;
          },
        };
      }
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  child.kill('SIGKILL');
  return undefined;
}

export interface WorkerError extends Error {
  code: string;
}

/** One provider instance in its own process, driven over its stdin/stdout protocol. */
export class WorkerInstance {
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  #next = 1;
  readonly #pending = new Map<
    number,
    { resolve: (v: unknown) => void; reject: (e: WorkerError) => void }
  >();

  private constructor(child: ChildProcess) {
    this.child = child;
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
    // A write to a worker killed a moment ago (its exit not seen yet) fails with EPIPE on the
    // stream, not on the write call. That call is rejected with WORKER_EXITED by the exit handler
    // below; without a listener the EPIPE would surface as an uncaught error of the whole run.
    child.stdin?.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') throw error;
    });
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      const msg = JSON.parse(line) as {
        id: number;
        ok: boolean;
        value?: unknown;
        error?: { code: string; message: string };
      };
      const waiter = this.#pending.get(msg.id);
      if (!waiter) return;
      this.#pending.delete(msg.id);
      if (msg.ok) waiter.resolve(msg.value);
      else {
        const err = new Error(msg.error?.message ?? 'worker error') as WorkerError;
        err.code = msg.error?.code ?? 'ERROR';
        waiter.reject(err);
      }
    });
    void this.exited.then((code) => {
      for (const [, w] of this.#pending) {
        const err = new Error(`worker exited (${code})`) as WorkerError;
        err.code = 'WORKER_EXITED';
        w.reject(err);
      }
      this.#pending.clear();
    });
  }

  static async start(workerFile: string, config: unknown): Promise<WorkerInstance> {
    const child = spawn(process.execPath, [workerFile, JSON.stringify({ config })], {
      stdio: ['pipe', 'pipe', 'inherit'],
      env: process.env,
    });
    const instance = new WorkerInstance(child);
    await new Promise<void>((resolve, reject) => {
      instance.#pending.set(0, { resolve: () => resolve(), reject });
    });
    return instance;
  }

  call<T = unknown>(op: string, args: Record<string, unknown> = {}): Promise<T> {
    if (!this.alive) {
      // No reply would ever come (the exit handler has already rejected what was pending).
      const err = new Error('worker exited') as WorkerError;
      err.code = 'WORKER_EXITED';
      return Promise.reject(err);
    }
    const id = this.#next++;
    return new Promise<T>((resolve, reject) => {
      this.#pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.child.stdin!.write(`${JSON.stringify({ id, op, args })}\n`);
    });
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** A crash: no shutdown, no lease release, nothing. */
  async kill(): Promise<void> {
    if (!this.alive) return;
    this.child.kill('SIGKILL');
    await this.exited;
  }

  /** Clean shutdown when alive (bounded); a crash otherwise. */
  async stop(): Promise<void> {
    if (!this.alive) return;
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 60_000);
    try {
      await this.call('shutdown');
    } catch {
      // exited meanwhile
    } finally {
      clearTimeout(timer);
      await this.exited;
    }
  }
}

/**
 * What the multi-gateway tests need: Docker with the stand-in image, and a private Redis (they
 * flush it). `redis` is undefined when either is missing (the tests skip); with services required
 * (CI) a Redis that cannot be started is an error naming `purpose`.
 */
export async function dockerAndPrivateRedis(
  purpose: string,
): Promise<{ docker: Docker | undefined; redis: PrivateRedis | undefined }> {
  const { requireService, servicesRequired } = await import('@sbx/core/testing');
  const { AIO_STANDIN_IMAGE, dockerFor, imagesPresent } = await import('../docker-test-support.js');
  const dockerHost = await requireService('docker');
  const redisAvailable = await requireService('redis');
  const docker = dockerHost ? dockerFor(dockerHost) : undefined;
  const imageReady = docker ? await imagesPresent(docker, [AIO_STANDIN_IMAGE]) : false;
  const redis = imageReady && redisAvailable ? await startPrivateRedis() : undefined;
  if (imageReady && redisAvailable && !redis && servicesRequired()) {
    throw new Error(`redis-server could not be started for ${purpose}`);
  }
  return { docker, redis };
}
