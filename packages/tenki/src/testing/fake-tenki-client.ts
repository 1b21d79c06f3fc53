import { createReadStream } from 'node:fs';
import { mkdir, mkdtemp, open, readFile, rm, stat, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CallGate, busyboxBin, runOnHost, startOnHost } from '@sbx/core/testing';
import type { Userland } from '@sbx/core/testing';
import type {
  TenkiClient,
  TenkiCreateOptions,
  TenkiExecOptions,
  TenkiExecResult,
  TenkiFs,
  TenkiRemoteSandbox,
  TenkiStat,
} from '../tenki-client.js';

export type FakeTenkiMethod =
  | 'create'
  | 'close'
  | 'waitReady'
  | 'exec'
  | 'start'
  | 'terminate'
  | 'mkdir'
  | 'readBytes'
  | 'readStream'
  | 'writeStream'
  | 'stat';

export interface FakeTenkiClientOptions {
  root?: string;
  userland?: Userland;
  /** HOME of the sandbox user. Default `/home/tenki`. */
  homeDir?: string;
  /**
   * Give every VM a `/mnt/user-data` link to HOME, as the bootstrap creates where `sudo` works.
   * Default true.
   */
  userDataLink?: boolean;
  /**
   * Give every VM the optional `start` (live commands), as a client over the SDKs' `start` would.
   * Default true; false stands in for a client with one-shot `exec` only.
   */
  liveCommands?: boolean;
}

/** An async iterable fed by a callback: the stand-in's output stream of a live command. */
class ChunkStream implements AsyncIterable<Uint8Array> {
  readonly #chunks: Uint8Array[] = [];
  #ended = false;
  #wake: (() => void) | undefined;

  push(chunk: Uint8Array): void {
    this.#chunks.push(chunk);
    this.#wake?.();
  }

  end(): void {
    this.#ended = true;
    this.#wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    for (;;) {
      const next = this.#chunks.shift();
      if (next) {
        yield next;
        continue;
      }
      if (this.#ended) return;
      await new Promise<void>((resolve) => (this.#wake = resolve));
      this.#wake = undefined;
    }
  }
}

export interface FakeExecCall {
  readonly sandbox: string;
  readonly argv: readonly string[];
  readonly options: TenkiExecOptions;
}

export interface FakeWrite {
  readonly path: string;
  readonly frames: number;
  readonly bytes: number;
  readonly truncate: boolean;
}

/** An error shaped like the Python SDK's: only its `name` says what it is. */
export function sdkError(name: string, message = name): Error {
  const error = new Error(message);
  error.name = name;
  return error;
}

/** A Node-style connection error (`ECONNRESET`, `EPIPE`, ...). */
export function errnoError(code: string, message = `${code}: connection lost`): Error {
  return Object.assign(new Error(message), { code });
}

function translateFsError(error: unknown, vmPath: string): Error {
  const code = (error as NodeJS.ErrnoException).code;
  const names: Record<string, string> = {
    ENOENT: 'FileNotFoundError',
    EISDIR: 'IsADirectoryError',
    ENOTDIR: 'NotADirectoryError',
    EACCES: 'PermissionError',
  };
  const name = code === undefined ? undefined : names[code];
  return name ? sdkError(name, `${name}: ${vmPath}`) : (error as Error);
}

/**
 * A stand-in Tenki microVM: a directory on the host, commands run for real through the host shell
 * (`runOnHost` of `@sbx/core/testing`), files through Node's fs below that directory. Failures are
 * injected per sandbox: `dead` fails every call, `execFailures`/`fsFailures` fail the next calls,
 * `streamFailure` breaks a download mid-stream, `readyFailure`/`terminateFailures` the lifecycle.
 */
export class FakeTenkiSandbox implements TenkiRemoteSandbox {
  readonly id: string;
  readonly name: string;
  readonly dir: string;
  readonly options: TenkiCreateOptions;
  readonly fs: TenkiFs;
  readonly #client: FakeTenkiClient;
  terminated = false;
  terminateCalls = 0;
  waitReadyCalls: (number | undefined)[] = [];
  dead: Error | undefined;
  readyFailure: Error | undefined;
  readonly execFailures: Error[] = [];
  readonly fsFailures: Error[] = [];
  readonly terminateFailures: Error[] = [];
  /** Breaks the next download after this many bytes. */
  streamFailure: { afterBytes: number; error: Error } | undefined;
  readonly writes: FakeWrite[] = [];
  /** Signals sent to live commands, in order. */
  readonly signals: string[] = [];

  constructor(client: FakeTenkiClient, id: string, dir: string, options: TenkiCreateOptions) {
    this.#client = client;
    this.id = id;
    this.name = options.name;
    this.dir = dir;
    this.options = options;
    this.fs = this.#fs();
  }

  /** Every later call fails with `SessionTerminatedError` (or `error`). */
  kill(error: Error = sdkError('SessionTerminatedError', 'session terminated')): this {
    this.dead = error;
    return this;
  }

  /** The host path of a VM path, or a `PermissionError` outside what the fake maps. */
  hostPath(vmPath: string): string {
    const inside = this.#client.mapped.some((p) => vmPath === p || vmPath.startsWith(`${p}/`));
    if (!inside) throw sdkError('PermissionError', `PermissionError: ${vmPath}`);
    return `${this.dir}${vmPath}`;
  }

  waitReady(timeoutSeconds?: number): Promise<void> {
    return this.#client.gate.invoke('waitReady', [this.id, timeoutSeconds], async () => {
      this.waitReadyCalls.push(timeoutSeconds);
      if (this.readyFailure) throw this.readyFailure;
    });
  }

  exec(argv: readonly string[], options: TenkiExecOptions = {}): Promise<TenkiExecResult> {
    const call: FakeExecCall = { sandbox: this.id, argv: [...argv], options };
    this.#client.execCalls.push(call);
    return this.#client.gate.invoke('exec', [call], async () => {
      this.#check();
      const failure = this.execFailures.shift();
      if (failure) throw failure;
      const [command, ...args] = argv;
      const result = await runOnHost({
        boxDir: this.dir,
        mapped: this.#client.mapped,
        command: command ?? 'sh',
        args,
        env: options.env ?? {},
        timeoutSecs: options.timeoutSeconds,
        signal: options.signal,
        busyboxDir: await this.#client.busyboxDir(),
      });
      const encoder = new TextEncoder();
      return {
        exitCode: result.exitCode,
        stdout: encoder.encode(result.stdout),
        stderr: encoder.encode(result.stderr),
      };
    });
  }

  /** Present unless the client was made with `liveCommands: false`. */
  start: TenkiRemoteSandbox['start'] = (argv, options = {}) => {
    const call: FakeExecCall = { sandbox: this.id, argv: [...argv], options };
    this.#client.execCalls.push(call);
    return this.#client.gate.invoke('start', [call], async () => {
      this.#check();
      const failure = this.execFailures.shift();
      if (failure) throw failure;
      const [command, ...args] = argv;
      const stdout = new ChunkStream();
      const stderr = new ChunkStream();
      const encoder = new TextEncoder();
      const live = startOnHost({
        boxDir: this.dir,
        mapped: this.#client.mapped,
        command: command ?? 'sh',
        args,
        env: options.env ?? {},
        timeoutSecs: options.timeoutSeconds,
        busyboxDir: await this.#client.busyboxDir(),
        stdin: true,
        onStdout: (text) => stdout.push(encoder.encode(text)),
        onStderr: (text) => stderr.push(encoder.encode(text)),
      });
      const exited = live.exited.then((exit) => {
        stdout.end();
        stderr.end();
        return exit;
      });
      return {
        stdout,
        stderr,
        writeStdin: async (data) => {
          this.#check();
          live.write(data);
        },
        closeStdin: async () => live.closeStdin(),
        wait: async () => {
          const exit = await exited;
          if (exit.error) throw exit.error;
          return { exitCode: exit.signal ? null : exit.exitCode };
        },
        kill: async (signal) => {
          this.#check();
          this.signals.push(signal);
          live.kill(signal);
        },
      };
    });
  };

  close(): Promise<void> {
    return this.#client.gate.invoke('terminate', [this.id], async () => {
      this.terminateCalls += 1;
      if (this.terminated) throw sdkError('SessionNotFoundError', `no such sandbox: ${this.id}`);
      const failure = this.terminateFailures.shift();
      if (failure) throw failure;
      this.terminated = true;
    });
  }

  #check(): void {
    if (this.dead) throw this.dead;
    if (this.terminated) throw sdkError('SessionNotFoundError', `no such sandbox: ${this.id}`);
  }

  #fsCall<T>(
    method: FakeTenkiMethod,
    vmPath: string,
    work: (host: string) => Promise<T>,
  ): Promise<T> {
    return this.#client.gate.invoke(method, [this.id, vmPath], async () => {
      this.#check();
      const failure = this.fsFailures.shift();
      if (failure) throw failure;
      const host = this.hostPath(vmPath);
      try {
        return await work(host);
      } catch (error) {
        throw translateFsError(error, vmPath);
      }
    });
  }

  #fs(): TenkiFs {
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const self = this;
    return {
      mkdir: (p, o = {}) =>
        this.#fsCall('mkdir', p, async (host) => {
          await mkdir(host, { recursive: o.recursive ?? true });
        }),
      readBytes: (p) =>
        this.#fsCall('readBytes', p, async (host) => new Uint8Array(await readFile(host))),
      stat: (p) =>
        this.#fsCall('stat', p, async (host): Promise<TenkiStat> => {
          const s = await stat(host);
          return { path: p, size: s.size, isDir: s.isDirectory() };
        }),
      writeStream: (p, chunks, o = {}) =>
        this.#fsCall('writeStream', p, async (host) => {
          const truncate = o.truncate ?? true;
          const handle = await open(host, truncate ? 'w' : 'a');
          let frames = 0;
          let bytes = 0;
          try {
            for await (const chunk of chunks) {
              frames += 1;
              bytes += chunk.length;
              await handle.write(chunk);
            }
          } finally {
            await handle.close();
          }
          self.writes.push({ path: p, frames, bytes, truncate });
        }),
      readStream: (p) => ({
        [Symbol.asyncIterator]: async function* () {
          const host = await self.#fsCall('readStream', p, async (h) => {
            await stat(h).then((s) => {
              if (s.isDirectory()) throw Object.assign(new Error('EISDIR'), { code: 'EISDIR' });
            });
            return h;
          });
          const failure = self.streamFailure;
          self.streamFailure = undefined;
          let sent = 0;
          const stream = createReadStream(host, { highWaterMark: 64 * 1024 });
          try {
            for await (const chunk of stream) {
              const bytes = new Uint8Array(chunk as Buffer);
              if (failure && sent + bytes.length > failure.afterBytes) throw failure.error;
              sent += bytes.length;
              yield bytes;
            }
          } finally {
            stream.destroy();
          }
        },
      }),
    };
  }
}

export class FakeTenkiClient implements TenkiClient {
  readonly gate = new CallGate<FakeTenkiMethod>();
  readonly homeDir: string;
  readonly mapped: readonly string[];
  readonly userland: Userland;
  readonly userDataLink: boolean;
  readonly liveCommands: boolean;
  readonly createCalls: TenkiCreateOptions[] = [];
  readonly sandboxes: FakeTenkiSandbox[] = [];
  readonly execCalls: FakeExecCall[] = [];
  readonly createFailures: Error[] = [];
  /** Applied to the next created sandbox before `create` resolves (e.g. a readiness failure). */
  readonly prepareNext: ((sandbox: FakeTenkiSandbox) => void)[] = [];
  closed = false;
  #root: Promise<string> | undefined;
  readonly #ownsRoot: boolean;
  #busybox: Promise<string> | undefined;

  constructor(options: FakeTenkiClientOptions = {}) {
    this.#root = options.root === undefined ? undefined : Promise.resolve(options.root);
    this.#ownsRoot = options.root === undefined;
    this.homeDir = options.homeDir ?? '/home/tenki';
    this.mapped = ['/mnt/user-data', this.homeDir];
    this.userland = options.userland ?? 'host';
    this.userDataLink = options.userDataLink ?? true;
    this.liveCommands = options.liveCommands ?? true;
  }

  create(options: TenkiCreateOptions): Promise<TenkiRemoteSandbox> {
    this.createCalls.push(options);
    return this.gate.invoke('create', [options], async () => {
      const failure = this.createFailures.shift();
      if (failure) throw failure;
      const root = await this.#rootDir();
      const id = `tk-${this.sandboxes.length + 1}`;
      const dir = path.join(root, id);
      await mkdir(path.join(dir, this.homeDir), { recursive: true });
      await mkdir(path.join(dir, 'mnt'), { recursive: true });
      if (this.userDataLink)
        await symlink(`${dir}${this.homeDir}`, path.join(dir, 'mnt', 'user-data'));
      const sandbox = new FakeTenkiSandbox(this, id, dir, options);
      if (!this.liveCommands) sandbox.start = undefined;
      this.prepareNext.shift()?.(sandbox);
      this.sandboxes.push(sandbox);
      return sandbox;
    });
  }

  close(): Promise<void> {
    return this.gate.invoke('close', [], async () => {
      this.closed = true;
    });
  }

  /** The sandbox most recently created under `name`. */
  latest(name: string): FakeTenkiSandbox | undefined {
    return this.sandboxes.filter((s) => s.name === name).at(-1);
  }

  busyboxDir(): Promise<string | undefined> {
    if (this.userland !== 'busybox') return Promise.resolve(undefined);
    this.#busybox ??= this.#rootDir().then(busyboxBin);
    return this.#busybox;
  }

  async dispose(): Promise<void> {
    if (this.#root !== undefined && this.#ownsRoot)
      await rm(await this.#root, { recursive: true, force: true });
  }

  #rootDir(): Promise<string> {
    this.#root ??= mkdtemp(path.join(tmpdir(), 'sbx-tenki-fake-'));
    return this.#root;
  }
}
