import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MemoryOwnershipStore, parseSandboxConfig } from '@sbx/core';
import { MemoryLeaseTable } from '@sbx/core/provider-kit';
import { OwnershipBackendError } from '@sbx/core';
import type { ClaimOptions, Logger, OwnershipStore } from '@sbx/core';
import { ManualClock, pausable } from '@sbx/core/testing';
import type { Pausable } from '@sbx/core/testing';
import { AioSandboxProvider } from '../aio-sandbox-provider.js';
import type { AioSandboxProviderInit } from '../aio-sandbox-provider.js';
import { MemorySandboxBackend } from './memory-sandbox-backend.js';

/**
 * Test support for the provider: a fake backend, memory ownership stores sharing one lease table
 * (several "instances" on one store backend), a manual clock, all wrapped so any call can be held.
 */

export interface LogRecord {
  level: 'debug' | 'info' | 'warn' | 'error';
  msg: string;
  fields: Record<string, unknown> | undefined;
}

export class RecordingLogger implements Logger {
  readonly records: LogRecord[] = [];
  debug(msg: string, fields?: Record<string, unknown>) {
    this.records.push({ level: 'debug', msg, fields });
  }
  info(msg: string, fields?: Record<string, unknown>) {
    this.records.push({ level: 'info', msg, fields });
  }
  warn(msg: string, fields?: Record<string, unknown>) {
    this.records.push({ level: 'warn', msg, fields });
  }
  error(msg: string, fields?: Record<string, unknown>) {
    this.records.push({ level: 'error', msg, fields });
  }
  has(level: LogRecord['level'], text: string): boolean {
    return this.records.some((r) => r.level === level && r.msg.includes(text));
  }
}

type StoreMethod = 'take' | 'claim' | 'renew' | 'release' | 'owner';

/**
 * An ownership store that delegates to `inner`, can report cross-process visibility (so the
 * adoption grace applies to memory stores sharing one table), and fails chosen methods with
 * `OwnershipBackendError` (a store that cannot answer).
 */
export class TestOwnershipStore implements OwnershipStore {
  readonly faults = new Map<StoreMethod, Error>();
  constructor(
    readonly inner: OwnershipStore,
    readonly supportsCrossProcess: boolean,
  ) {}
  get ownerId() {
    return this.inner.ownerId;
  }
  /** Every later call of `method` fails (until `heal`). */
  fail(
    method: StoreMethod,
    error: Error = new OwnershipBackendError(`${method} failed: store down`),
  ) {
    this.faults.set(method, error);
  }
  heal(method?: StoreMethod) {
    if (method === undefined) this.faults.clear();
    else this.faults.delete(method);
  }
  #check(method: StoreMethod) {
    const error = this.faults.get(method);
    if (error) throw error;
  }
  async take(id: string) {
    this.#check('take');
    return this.inner.take(id);
  }
  async claim(id: string, options?: ClaimOptions) {
    this.#check('claim');
    return this.inner.claim(id, options);
  }
  async renew(id: string) {
    this.#check('renew');
    return this.inner.renew(id);
  }
  async release(id: string) {
    this.#check('release');
    return this.inner.release(id);
  }
  async owner(id: string) {
    this.#check('owner');
    return this.inner.owner(id);
  }
  close() {
    return this.inner.close();
  }
}

export interface HarnessOptions {
  /** The `sandbox:` section, merged over the defaults below. */
  config?: Record<string, unknown>;
  /** Report cross-process visibility (the grace applies). Default false. */
  crossProcess?: boolean;
  /** Share a backend / lease table / clock with another harness (a second instance). */
  backend?: MemorySandboxBackend;
  backendGate?: Pausable<MemorySandboxBackend>;
  table?: MemoryLeaseTable;
  clock?: ManualClock;
  baseDir?: string;
  ownerId?: string;
  background?: boolean;
  init?: Partial<AioSandboxProviderInit>;
  /** A subclass to construct (e.g. one that forces an id collision). */
  providerClass?: new (init: AioSandboxProviderInit) => AioSandboxProvider;
}

export interface Harness {
  provider: AioSandboxProvider;
  backend: MemorySandboxBackend;
  /** Holds backend calls; the provider talks to `backendGate.proxy`. */
  backendGate: Pausable<MemorySandboxBackend>;
  /** Holds this instance's store calls; the provider talks to `store.proxy`. */
  store: Pausable<TestOwnershipStore>;
  /** Fault injection on this instance's store. */
  faults: TestOwnershipStore;
  table: MemoryLeaseTable;
  clock: ManualClock;
  logger: RecordingLogger;
  baseDir: string;
  ttlSeconds: number;
  ownerId: string;
  /** Another instance's view of the same lease table. */
  peerStore(ownerId?: string): MemoryOwnershipStore;
  /** A second provider on the same backend, table and clock. */
  peer(options?: Omit<HarnessOptions, 'backend' | 'table' | 'clock'>): Promise<Harness>;
  /** The raw lease value, e.g. `own:<owner>` / `del:<owner>`, or undefined. */
  lease(id: string): string | undefined;
  cleanup(): Promise<void>;
}

let counter = 0;

export async function makeHarness(options: HarnessOptions = {}): Promise<Harness> {
  const ownDir = options.baseDir === undefined;
  const baseDir = options.baseDir ?? (await mkdtemp(path.join(tmpdir(), 'sbx-aio-provider-')));
  const clock = options.clock ?? new ManualClock(1_000_000);
  const table = options.table ?? new MemoryLeaseTable({ clock });
  const backend = options.backend ?? new MemorySandboxBackend();
  const backendGate = options.backendGate ?? pausable(backend);
  const logger = new RecordingLogger();
  const config = parseSandboxConfig(
    {
      use: '@sbx/aio',
      base_dir: baseDir,
      idle_timeout: 600,
      replicas: 3,
      ownership: { type: 'memory', renewal_interval_seconds: 30, ttl_multiplier: 4 },
      ...options.config,
    },
    { env: {} },
  );
  const ttlSeconds =
    (config.ownership?.renewalIntervalSeconds ?? 30) * (config.ownership?.ttlMultiplier ?? 4);
  counter += 1;
  const ownerId = options.ownerId ?? `instance-${counter}`;
  const memory = new MemoryOwnershipStore({ ownerId, ttlSeconds, table });
  const faults = new TestOwnershipStore(memory, options.crossProcess ?? false);
  const store = pausable(faults);
  const Provider = options.providerClass ?? AioSandboxProvider;
  const provider = new Provider({
    config,
    logger,
    backend: backendGate.proxy,
    ownershipStore: store.proxy,
    clock,
    env: {},
    createClient: (info) => backendGate.proxy.clientFor(info),
    readinessProbe: (info) => backendGate.proxy.readinessProbe(info),
    background: options.background ?? false,
    ...options.init,
  });
  await provider.ready();
  const harness: Harness = {
    provider,
    backend,
    backendGate,
    store,
    faults,
    table,
    clock,
    logger,
    baseDir,
    ttlSeconds,
    ownerId,
    peerStore: (peerOwner = `peer-${++counter}`) =>
      new MemoryOwnershipStore({ ownerId: peerOwner, ttlSeconds, table }),
    peer: (peerOptions = {}) =>
      makeHarness({
        config: options.config,
        crossProcess: options.crossProcess,
        providerClass: options.providerClass,
        baseDir,
        ...peerOptions,
        backend,
        backendGate,
        table,
        clock,
      }),
    lease: (id) => {
      const entry = table.get(id);
      return entry === undefined ? undefined : `${entry.state}:${entry.ownerId}`;
    },
    cleanup: async () => {
      await backendGate.releaseAll();
      await store.releaseAll();
      await provider.shutdown();
      if (ownDir) await rm(baseDir, { recursive: true, force: true });
    },
  };
  return harness;
}
