import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { MemoryOwnershipStore, parseSandboxConfig } from '@sbx/core';
import type { CapacityStore, Logger, OwnershipStore } from '@sbx/core';
import { MemoryLeaseTable } from '@sbx/core/provider-kit';
import { ManualClock, recordingLogger } from '@sbx/core/testing';
import type { RecordingLogger } from '@sbx/core/testing';
import { E2BSandboxProvider } from './e2b-sandbox-provider.js';
import { FakeE2BClient } from './testing/fake-e2b-client.js';

// The recording logger of @sbx/core/testing, re-exported for the tests that import it from here.
export { recordingLogger };
export type { RecordingLogger };

export interface HarnessOptions {
  /** Extra `sandbox:` keys (snake_case). */
  config?: Record<string, unknown>;
  fake?: FakeE2BClient;
  ownership?: OwnershipStore;
  capacity?: CapacityStore | null;
  clock?: ManualClock;
  logger?: Logger;
  baseDir?: string;
}

export interface Harness {
  provider: E2BSandboxProvider;
  fake: FakeE2BClient;
  clock: ManualClock;
  baseDir: string;
  ownership: OwnershipStore;
  logger: RecordingLogger;
  cleanup(): Promise<void>;
}

export async function makeHarness(options: HarnessOptions = {}): Promise<Harness> {
  const baseDir = options.baseDir ?? (await mkdtemp(path.join(os.tmpdir(), 'sbx-e2b-test-')));
  const fake = options.fake ?? new FakeE2BClient();
  const clock = options.clock ?? new ManualClock(1_700_000_000_000);
  const ownership = options.ownership ?? new MemoryOwnershipStore({ clock });
  const logger = recordingLogger();
  const provider = new E2BSandboxProvider({
    config: parseSandboxConfig({ use: '@sbx/e2b', base_dir: baseDir, ...options.config }),
    client: fake,
    ownershipStore: ownership,
    capacityStore: options.capacity === undefined ? null : options.capacity,
    clock,
    logger: options.logger ?? logger,
    background: false,
  });
  return {
    provider,
    fake,
    clock,
    baseDir,
    ownership,
    logger,
    cleanup: async () => {
      await provider.shutdown();
      if (options.fake === undefined) await fake.dispose();
      if (options.baseDir === undefined) await rm(baseDir, { recursive: true, force: true });
    },
  };
}

/**
 * `inner` as a store that shows peers' leases (`supportsCrossProcess`), as Redis does: memory
 * stores sharing one lease table then model gateways sharing one Redis, grace rules included.
 */
export function crossProcess(inner: OwnershipStore): OwnershipStore {
  return {
    get ownerId() {
      return inner.ownerId;
    },
    supportsCrossProcess: true,
    take: (id) => inner.take(id),
    claim: (id, options) => inner.claim(id, options),
    renew: (id) => inner.renew(id),
    release: (id) => inner.release(id),
    owner: (id) => inner.owner(id),
    close: () => inner.close(),
  };
}

/**
 * One lease table on `clock` and two stores over it: this gateway's and a peer's. `visible` makes
 * both report cross-process visibility (the Redis case); a flush is `table.clear()`.
 */
export function sharedLeases(clock: ManualClock, options: { visible?: boolean } = {}) {
  const table = new MemoryLeaseTable({ clock });
  const wrap = (s: MemoryOwnershipStore) => (options.visible ? crossProcess(s) : s);
  return {
    table,
    mine: wrap(new MemoryOwnershipStore({ table })),
    peer: wrap(new MemoryOwnershipStore({ table })),
  };
}
