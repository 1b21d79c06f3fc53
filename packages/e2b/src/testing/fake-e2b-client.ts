import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { CallGate } from '@sbx/core/testing';
import type {
  E2BClient,
  E2BCommandHandle,
  E2BCommandOptions,
  E2BCommandResult,
  E2BConnectOptions,
  E2BCreateOptions,
  E2BEntryInfo,
  E2BListOptions,
  E2BPaginator,
  E2BRemoteSandbox,
  E2BSandboxInfo,
  E2BWriteData,
} from '../e2b-client.js';
import { LocalVm, type LocalVmProcessControl, type LocalVmRunResult } from './local-vm.js';

/** Every operation the fake routes through its `gate` (pause / inspect) and `fail` rules. */
export type FakeE2BOp =
  | 'create'
  | 'connect'
  | 'list'
  | 'run'
  | 'read'
  | 'write'
  | 'makeDir'
  | 'remove'
  | 'getInfo'
  | 'setTimeout'
  | 'kill'
  | 'close'
  | 'sendStdin'
  | 'closeStdin'
  | 'killProcess'
  | 'listProcesses'
  | 'connectProcess';

/** An error shaped like the SDK's (the `name` is what callers classify by). */
export function sdkError(name: string, message: string, extra: object = {}): Error {
  const error = new Error(message);
  error.name = name;
  return Object.assign(error, extra);
}

export const fakeErrors = {
  connectNotFound: (id: string) =>
    sdkError('SandboxNotFoundError', `Paused sandbox ${id} not found`),
  notFound: (id: string) => sdkError('SandboxNotFoundError', `Sandbox ${id} not found`),
  notRunning: () => sdkError('SandboxNotFoundError', 'Sandbox is probably not running anymore'),
  envdGone: () =>
    sdkError(
      'TimeoutError',
      "The sandbox was not found: This error is likely due to sandbox timeout. You can modify the sandbox timeout by passing 'timeoutMs' when starting the sandbox or calling '.setTimeout' on the sandbox with the desired timeout.",
    ),
  fileNotFound: (p: string) => sdkError('FileNotFoundError', `path '${p}' does not exist`),
  commandTimeout: () =>
    sdkError(
      'TimeoutError',
      "deadline_exceeded: This error is likely due to exceeding 'timeoutMs' — the total time a long running request (like command execution or directory watch) can be active.",
    ),
  connectionReset: () => new Error('Connection reset by peer'),
};

export interface FakeVmRecord {
  readonly sandboxId: string;
  readonly template: string;
  readonly metadata: Record<string, string>;
  readonly envs: Record<string, string>;
  timeoutMs: number | undefined;
  alive: boolean;
  readonly startedAt: Date;
  readonly vm: LocalVm;
}

export interface FakeCall {
  readonly op: FakeE2BOp;
  readonly sandboxId: string | undefined;
  readonly detail?: unknown;
}

interface FailRule {
  op: FakeE2BOp;
  sandboxId: string | undefined;
  error: () => unknown;
  remaining: number;
}

export interface FakeE2BClientOptions {
  /** Host directory for the VMs' filesystems; a fresh temp directory by default. */
  root?: string;
  /** Default page size of `list`. Default 100 (the SDK's). */
  pageSize?: number;
  /** Home directory created in every VM. Default `/home/user`. */
  homeDir?: string;
  /** Ids handed out by `create`; default `fake-<n>`. */
  idFactory?: (n: number) => string;
}

/**
 * An in-memory E2B control plane whose VMs run commands in local temp directories (`LocalVm`).
 * Several providers may share one fake, as several gateways share one E2B account.
 *
 * Control points for tests:
 * - `gate` (a `CallGate`): `gate.pause('kill')`, `await gate.nextCall('kill')`, `gate.count(...)`;
 *   every operation passes through it, so any interleaving can be held open deterministically.
 * - `fail(op, error, { times, sandboxId })`: the next matching calls reject with `error`.
 * - `reap(id)`: the control plane kills a VM behind everyone's back (idle timeout).
 * - `calls`: every operation in order, with the sandbox id it touched.
 */
export class FakeE2BClient implements E2BClient {
  readonly gate = new CallGate<FakeE2BOp>();
  readonly vms = new Map<string, FakeVmRecord>();
  readonly calls: FakeCall[] = [];
  readonly pageSize: number;
  readonly homeDir: string;
  #root: string | undefined;
  readonly #ownsRoot: boolean;
  #rootReady: Promise<string> | undefined;
  #seq = 0;
  readonly #idFactory: (n: number) => string;
  readonly #rules: FailRule[] = [];

  constructor(options: FakeE2BClientOptions = {}) {
    this.#root = options.root;
    this.#ownsRoot = options.root === undefined;
    this.pageSize = options.pageSize ?? 100;
    this.homeDir = options.homeDir ?? '/home/user';
    this.#idFactory = options.idFactory ?? ((n) => `fake-${n}`);
  }

  /** Make the next `times` (default 1) calls of `op` (optionally for one VM) reject. */
  fail(
    op: FakeE2BOp,
    error: unknown | (() => unknown),
    options: { times?: number; sandboxId?: string } = {},
  ): this {
    this.#rules.push({
      op,
      sandboxId: options.sandboxId,
      error: typeof error === 'function' ? (error as () => unknown) : () => error,
      remaining: options.times ?? 1,
    });
    return this;
  }

  /** Calls of `op` (optionally for one VM). */
  callsOf(op: FakeE2BOp, sandboxId?: string): FakeCall[] {
    return this.calls.filter(
      (c) => c.op === op && (sandboxId === undefined || c.sandboxId === sandboxId),
    );
  }

  /** Live VMs. */
  alive(): FakeVmRecord[] {
    return [...this.vms.values()].filter((v) => v.alive);
  }

  /** The control plane kills a VM (idle timeout, operator action). */
  reap(sandboxId: string): void {
    const record = this.vms.get(sandboxId);
    if (record) record.alive = false;
  }

  /** Adds a VM as if created by someone else (another gateway, an earlier process). */
  async seed(init: {
    sandboxId?: string;
    template?: string;
    metadata?: Record<string, string>;
    startedAt?: Date;
  }): Promise<FakeVmRecord> {
    return this.#newVm(
      init.sandboxId,
      init.template ?? 'base',
      init.metadata ?? {},
      {},
      undefined,
      init.startedAt,
    );
  }

  async dispose(): Promise<void> {
    for (const record of this.vms.values()) await record.vm.destroy().catch(() => undefined);
    if (this.#ownsRoot && this.#root) await rm(this.#root, { recursive: true, force: true });
  }

  create(opts: E2BCreateOptions): Promise<E2BRemoteSandbox> {
    return this.#op('create', undefined, opts, async () => {
      const record = await this.#newVm(
        undefined,
        opts.template,
        opts.metadata,
        opts.envs ?? {},
        opts.timeoutMs,
      );
      return this.#handle(record);
    });
  }

  connect(sandboxId: string, opts: E2BConnectOptions = {}): Promise<E2BRemoteSandbox> {
    return this.#op('connect', sandboxId, opts, async () => {
      const record = this.vms.get(sandboxId);
      if (!record?.alive) throw fakeErrors.connectNotFound(sandboxId);
      if (opts.timeoutMs !== undefined && (record.timeoutMs ?? 0) < opts.timeoutMs) {
        record.timeoutMs = opts.timeoutMs;
      }
      return this.#handle(record);
    });
  }

  list(opts: E2BListOptions = {}): E2BPaginator {
    const limit = opts.limit ?? this.pageSize;
    let token: string | undefined = opts.nextToken;
    let started = false;
    const matches = (record: FakeVmRecord): boolean => {
      if (!record.alive) return false;
      const states = opts.query?.state;
      if (states && !states.includes('running')) return false;
      const wanted = opts.query?.metadata ?? {};
      return Object.entries(wanted).every(([k, v]) => record.metadata[k] === v);
    };
    const paginator: E2BPaginator = {
      get hasNext() {
        return !started || token !== undefined;
      },
      get nextToken() {
        return token;
      },
      nextItems: () =>
        this.#op('list', undefined, { ...opts, nextToken: token }, async () => {
          if (started && token === undefined) throw new Error('No more items to fetch');
          started = true;
          const all = [...this.vms.values()].filter(matches);
          const offset = token === undefined ? 0 : Number(token);
          const page = all.slice(offset, offset + limit);
          token = offset + limit < all.length ? String(offset + limit) : undefined;
          return page.map((r): E2BSandboxInfo => ({
            sandboxId: r.sandboxId,
            templateId: r.template,
            metadata: { ...r.metadata },
            startedAt: r.startedAt,
            state: 'running',
          }));
        }),
    };
    return paginator;
  }

  async #rootDir(): Promise<string> {
    if (this.#root !== undefined) return this.#root;
    this.#rootReady ??= mkdtemp(path.join(os.tmpdir(), 'sbx-e2b-fake-')).then((dir) => {
      this.#root = dir;
      return dir;
    });
    return this.#rootReady;
  }

  async #newVm(
    id: string | undefined,
    template: string,
    metadata: Record<string, string>,
    envs: Record<string, string>,
    timeoutMs: number | undefined,
    startedAt?: Date,
  ): Promise<FakeVmRecord> {
    this.#seq += 1;
    const sandboxId = id ?? this.#idFactory(this.#seq);
    const vm = new LocalVm(path.join(await this.#rootDir(), sandboxId), envs);
    await vm.init(this.homeDir);
    const record: FakeVmRecord = {
      sandboxId,
      template,
      metadata: { ...metadata },
      envs: { ...envs },
      timeoutMs,
      alive: true,
      startedAt: startedAt ?? new Date(),
      vm,
    };
    this.vms.set(sandboxId, record);
    return record;
  }

  #op<T>(op: FakeE2BOp, sandboxId: string | undefined, detail: unknown, real: () => Promise<T>) {
    this.calls.push({ op, sandboxId, detail });
    return this.gate.invoke(op, [sandboxId, detail], async () => {
      const at = this.#rules.findIndex(
        (r) => r.op === op && (r.sandboxId === undefined || r.sandboxId === sandboxId),
      );
      if (at >= 0) {
        const rule = this.#rules[at] as FailRule;
        rule.remaining -= 1;
        if (rule.remaining <= 0) this.#rules.splice(at, 1);
        throw rule.error();
      }
      return real();
    }) as Promise<T>;
  }

  #handle(record: FakeVmRecord): E2BRemoteSandbox {
    const id = record.sandboxId;
    const vm = record.vm;
    const ensureAlive = (gone: () => Error): void => {
      if (!record.alive) throw gone();
    };
    const files = {
      read: ((p: string, opts?: { format?: 'text' | 'bytes' | 'stream' }) =>
        this.#op('read', id, { path: p, format: opts?.format ?? 'text' }, async () => {
          ensureAlive(fakeErrors.envdGone);
          let bytes: Uint8Array;
          try {
            bytes = await vm.readBytes(p);
          } catch {
            throw fakeErrors.fileNotFound(p);
          }
          const format = opts?.format ?? 'text';
          if (format === 'bytes') return bytes;
          if (format === 'stream') {
            return new ReadableStream<Uint8Array>({
              start(controller) {
                const chunk = 64 * 1024;
                for (let i = 0; i < bytes.byteLength; i += chunk) {
                  controller.enqueue(bytes.slice(i, i + chunk));
                }
                controller.close();
              },
            });
          }
          return new TextDecoder().decode(bytes);
        })) as E2BRemoteSandbox['files']['read'],
      write: (p: string, data: E2BWriteData) =>
        this.#op('write', id, { path: p }, async () => {
          ensureAlive(fakeErrors.envdGone);
          await vm.writeBytes(p, await toBytes(data));
          return { name: path.posix.basename(p), path: p, type: 'file' };
        }),
      makeDir: (p: string) =>
        this.#op('makeDir', id, { path: p }, async () => {
          ensureAlive(fakeErrors.envdGone);
          return vm.makeDir(p);
        }),
      remove: (p: string) =>
        this.#op('remove', id, { path: p }, async () => {
          ensureAlive(fakeErrors.envdGone);
          await vm.remove(p);
        }),
      getInfo: (p: string) =>
        this.#op('getInfo', id, { path: p }, async (): Promise<E2BEntryInfo> => {
          ensureAlive(fakeErrors.envdGone);
          try {
            const info = await vm.info(p);
            return { name: path.posix.basename(p), path: p, ...info };
          } catch {
            throw fakeErrors.fileNotFound(p);
          }
        }),
    };
    return {
      sandboxId: id,
      commands: this.#commands(id, vm, ensureAlive),
      files,
      setTimeout: (timeoutMs: number) =>
        this.#op('setTimeout', id, timeoutMs, async () => {
          ensureAlive(() => fakeErrors.notFound(id));
          record.timeoutMs = timeoutMs;
        }),
      kill: () =>
        this.#op('kill', id, undefined, async () => {
          const wasAlive = record.alive;
          record.alive = false;
          return wasAlive;
        }),
      close: () => this.#op('close', id, undefined, async () => undefined),
    };
  }

  /** `commands` of one VM: foreground runs, background handles and their stdin and kill. */
  #commands(
    id: string,
    vm: LocalVm,
    ensureAlive: (error: () => Error) => void,
  ): E2BRemoteSandbox['commands'] {
    // Processes are the VM's (`vm.processes`), not this connection's: another client of the same
    // VM lists and connects to them, as with envd.
    const outcome = (result: LocalVmRunResult): E2BCommandResult => {
      if (result.timedOut) throw fakeErrors.commandTimeout();
      if (result.exitCode !== 0) {
        throw sdkError('CommandExitError', `exit status ${result.exitCode}`, {
          exitCode: result.exitCode,
          stdout: result.stdout,
          stderr: result.stderr,
        });
      }
      return { exitCode: 0, stdout: result.stdout, stderr: result.stderr };
    };
    const start = (cmd: string, opts: E2BCommandOptions & { stdin?: boolean }) => {
      let started!: (control: LocalVmProcessControl) => void;
      const ready = new Promise<LocalVmProcessControl>((resolve) => (started = resolve));
      const finished = vm
        .run(cmd, { ...opts, timeoutMs: opts.timeoutMs ?? 60_000, onStart: (c) => started(c) })
        .then(outcome);
      return { ready, finished };
    };
    const control = (pid: number): LocalVmProcessControl => {
      const found = vm.processes.get(pid);
      if (!found) throw sdkError('NotFoundError', `process with pid ${pid} not found`);
      return found.control;
    };
    const run = ((
      cmd: string,
      opts: E2BCommandOptions & { background?: boolean; stdin?: boolean } = {},
    ) =>
      this.#op('run', id, { cmd, ...opts }, async () => {
        ensureAlive(fakeErrors.notRunning);
        const { background, ...rest } = opts;
        const { ready, finished } = start(cmd, rest);
        if (!background) return finished;
        finished.catch(() => {});
        const { pid } = await ready;
        const handle: E2BCommandHandle = { pid, wait: () => finished, disconnect: async () => {} };
        return handle;
      })) as E2BRemoteSandbox['commands']['run'];
    return {
      run,
      sendStdin: (pid, data) =>
        this.#op('sendStdin', id, { pid }, async () => {
          control(pid).write(data);
        }),
      closeStdin: (pid) =>
        this.#op('closeStdin', id, { pid }, async () => {
          control(pid).closeStdin();
        }),
      kill: (pid) =>
        this.#op('killProcess', id, { pid }, async () => {
          const found = vm.processes.get(pid);
          if (!found) return false;
          found.control.kill('SIGKILL');
          return true;
        }),
      list: () =>
        this.#op('listProcesses', id, undefined, async () => {
          ensureAlive(fakeErrors.notRunning);
          return [...vm.processes.values()].map((p) => ({
            pid: p.pid,
            cmd: '/bin/bash',
            args: ['-l', '-c', p.command],
            envs: { ...p.envs },
            ...(p.cwd ? { cwd: p.cwd } : {}),
          }));
        }),
      connect: (pid, opts = {}) =>
        this.#op('connectProcess', id, { pid }, async () => {
          ensureAlive(fakeErrors.notRunning);
          const found = vm.processes.get(pid);
          if (!found) throw sdkError('NotFoundError', `process with pid ${pid} not found`);
          const unfollow = found.follow({
            ...(opts.onStdout ? { onStdout: opts.onStdout } : {}),
            ...(opts.onStderr ? { onStderr: opts.onStderr } : {}),
          });
          const finished = found.ended.then(outcome);
          finished.catch(() => {});
          const handle: E2BCommandHandle = {
            pid,
            wait: () => finished,
            disconnect: async () => {
              unfollow();
            },
          };
          return handle;
        }),
    };
  }
}

async function toBytes(data: E2BWriteData): Promise<Uint8Array> {
  if (typeof data === 'string') return new TextEncoder().encode(data);
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (data instanceof Blob) return new Uint8Array(await data.arrayBuffer());
  const chunks: Uint8Array[] = [];
  const reader = data.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
  }
  return new Uint8Array(Buffer.concat(chunks));
}
