import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { CallGate } from '@sbx/core/testing';
import type {
  E2BClient,
  E2BConnectOptions,
  E2BCreateOptions,
  E2BListOptions,
  E2BPauseOptions,
  E2BPaginator,
  E2BRemoteSandbox,
  E2BSandboxInfo,
} from '../e2b-client.js';
import { LocalVm } from './local-vm.js';
import { fakeErrors } from './fake-e2b-errors.js';
import { fakeRemoteSandbox, type FakeOpRunner } from './fake-e2b-remote-sandbox.js';

/** Every operation the fake routes through its `gate` (pause / inspect) and `fail` rules. */
export type FakeE2BOp =
  | 'create'
  | 'connect'
  | 'pause'
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

export interface FakeVmRecord {
  readonly sandboxId: string;
  readonly template: string;
  readonly metadata: Record<string, string>;
  readonly envs: Record<string, string>;
  timeoutMs: number | undefined;
  alive: boolean;
  /**
   * Paused by `pause` (the SDK's `Sandbox.pause`): every call through a connection is refused, as
   * the VM's envd is not there to answer, until a `connect` resumes it.
   */
  paused: boolean;
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
  /** `#op` as the VM connections call it. */
  readonly #runOp: FakeOpRunner = (op, sandboxId, detail, real) =>
    this.#op(op, sandboxId, detail, real);

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
      return fakeRemoteSandbox(record, this.#runOp);
    });
  }

  connect(sandboxId: string, opts: E2BConnectOptions = {}): Promise<E2BRemoteSandbox> {
    return this.#op('connect', sandboxId, opts, async () => {
      const record = this.vms.get(sandboxId);
      if (!record?.alive) throw fakeErrors.connectNotFound(sandboxId);
      // The SDK's rule: connecting to a paused sandbox resumes it.
      record.paused = false;
      if (opts.timeoutMs !== undefined && (record.timeoutMs ?? 0) < opts.timeoutMs) {
        record.timeoutMs = opts.timeoutMs;
      }
      return fakeRemoteSandbox(record, this.#runOp);
    });
  }

  /**
   * `Sandbox.pause(id)`: `true` when it got paused, `false` when it already was (the SDK's
   * answers); a dead or unknown id is `SandboxNotFoundError`.
   */
  pause(sandboxId: string, opts: E2BPauseOptions = {}): Promise<boolean> {
    return this.#op('pause', sandboxId, opts, async () => {
      const record = this.vms.get(sandboxId);
      if (!record?.alive) throw fakeErrors.notFound(sandboxId);
      if (record.paused) return false;
      record.paused = true;
      return true;
    });
  }

  list(opts: E2BListOptions = {}): E2BPaginator {
    const limit = opts.limit ?? this.pageSize;
    let token: string | undefined = opts.nextToken;
    let started = false;
    const matches = (record: FakeVmRecord): boolean => {
      if (!record.alive) return false;
      // The SDK's default: running and paused.
      const states = opts.query?.state;
      if (states && !states.includes(record.paused ? 'paused' : 'running')) return false;
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
            state: r.paused ? 'paused' : 'running',
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
      paused: false,
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
}
