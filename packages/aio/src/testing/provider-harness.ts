import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MemoryLeaseTable, MemoryOwnershipStore, parseSandboxConfig } from '@sbx/core';
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

/**
 * An ownership store that delegates to `inner` but reports `supportsCrossProcess`, so the
 * cross-instance rules (the adoption grace) apply to memory stores sharing one table.
 */
export class CrossProcessStore implements OwnershipStore {
  readonly supportsCrossProcess = true;
  constructor(readonly inner: OwnershipStore) {}
  get ownerId() {
    return this.inner.ownerId;
  }
  take(id: string) {
    return this.inner.take(id);
  }
  claim(id: string, options?: ClaimOptions) {
    return this.inner.claim(id, options);
  }
  renew(id: string) {
    return this.inner.renew(id);
  }
  release(id: string) {
    return this.inner.release(id);
  }
  owner(id: string) {
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
}

export interface Harness {
  provider: AioSandboxProvider;
  backend: MemorySandboxBackend;
  /** Holds backend calls; the provider talks to `backendGate.proxy`. */
  backendGate: Pausable<MemorySandboxBackend>;
  /** Holds this instance's store calls; the provider talks to `store.proxy`. */
  store: Pausable<OwnershipStore>;
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
  const inner: OwnershipStore = options.crossProcess ? new CrossProcessStore(memory) : memory;
  const store = pausable<OwnershipStore>(inner);
  const provider = new AioSandboxProvider({
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
