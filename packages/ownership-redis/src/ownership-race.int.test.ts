import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { requireService } from '@sbx/core/testing';
import { Redis } from 'ioredis';
import { build } from 'tsup';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyLayout } from './key-layout.js';
import { uniquePrefix } from './testing/redis-store-harness.js';

const run = promisify(execFile);
const url = await requireService('redis');
const here = path.dirname(fileURLToPath(import.meta.url));

interface HistoryRecord {
  op: 'take' | 'claim' | 'claim-destroy' | 'renew' | 'release';
  key: string;
  owner: string;
  before: string;
  after: string;
  result: number;
}

/**
 * The decision table of aio-ownership.md §6.3 as a pure function, written independently of the Lua
 * scripts: given the value before, what must the script return and leave behind?
 */
function oracle(
  op: HistoryRecord['op'],
  me: string,
  before: string,
): { result: number; after: string } {
  const own = `own:${me}`;
  const del = `del:${me}`;
  switch (op) {
    case 'take':
      return before.startsWith('del:') ? { result: 0, after: before } : { result: 1, after: own };
    case 'claim':
      return before === '' || before === own
        ? { result: 1, after: own }
        : { result: 0, after: before };
    case 'claim-destroy':
      return before === '' || before === own || before === del
        ? { result: 1, after: del }
        : { result: 0, after: before };
    case 'renew':
      if (before === '') return { result: -1, after: '' };
      return before === own ? { result: 1, after: own } : { result: 0, after: before };
    case 'release':
      return before === own || before === del
        ? { result: 1, after: '' }
        : { result: 0, after: before };
  }
}

const RESULT_OF: Record<HistoryRecord['op'], (r: number) => unknown> = {
  take: (r) => r === 1,
  claim: (r) => r === 1,
  'claim-destroy': (r) => r === 1,
  renew: (r) => (r === 1 ? 'RENEWED' : r === -1 ? 'LAPSED' : 'LOST'),
  release: () => null,
};

describe.skipIf(!url)('ownership scripts under a multi-process race', () => {
  let workDir: string;
  let workerFile: string;
  let admin: Redis;

  beforeAll(async () => {
    workDir = await mkdtemp(path.join(tmpdir(), 'sbx-race-'));
    // One self-contained CommonJS file (ioredis and the store bundled in), so each contender is a
    // plain `node worker.cjs` process running exactly the code under test.
    await build({
      entry: { worker: path.join(here, 'testing/ownership-race-worker.ts') },
      outDir: workDir,
      format: ['cjs'],
      platform: 'node',
      target: 'node20',
      noExternal: [/.*/],
      dts: false,
      sourcemap: false,
      clean: false,
      silent: true,
      config: false,
      tsconfig: path.join(here, '../tsconfig.json'),
      esbuildOptions(options) {
        options.conditions = ['@sbx/source'];
      },
    });
    workerFile = path.join(workDir, 'worker.cjs');
    admin = new Redis(url!);
  }, 120_000);

  afterAll(async () => {
    await admin?.quit();
    if (workDir) await rm(workDir, { recursive: true, force: true });
  });

  it('N processes racing take/claim/claim(forDestroy)/renew/release never break the decision table', async () => {
    const prefix = uniquePrefix('race');
    const historyKey = `${prefix}:history`;
    const ids = ['vm-a', 'vm-b', 'vm-c'];
    const workers = 6;
    const opsPerWorker = 250;
    const startAt = Date.now() + 1_500;
    try {
      const outputs = await Promise.all(
        Array.from({ length: workers }, (_, i) =>
          run(process.execPath, [
            workerFile,
            JSON.stringify({
              url,
              keyPrefix: prefix,
              historyKey,
              ownerId: `worker-${i}:${prefix}`,
              ids,
              ops: opsPerWorker,
              seed: 1000 + i,
              startAt,
            }),
          ]),
        ),
      );
      const views = outputs.map(
        (o) =>
          JSON.parse(o.stdout.trim()) as {
            ownerId: string;
            results: { op: HistoryRecord['op']; id: string; result: unknown }[];
          },
      );
      const history = (await admin.lrange(historyKey, 0, -1)).map(
        (line) => JSON.parse(line) as HistoryRecord,
      );
      expect(history).toHaveLength(workers * opsPerWorker);

      // 1. Replay the server-side history (the order Redis executed the scripts in) against the
      //    oracle: every script saw the value the previous one left (no lost update) and did exactly
      //    what the table says — in particular no take ever succeeded over a del:, and no claim over
      //    anyone else's lease.
      const state = new Map<string, string>();
      let takeRefusedByDel = 0;
      let contestedClaims = 0;
      for (const [i, rec] of history.entries()) {
        const before = state.get(rec.key) ?? '';
        expect(rec.before, `record ${i} saw a stale value`).toBe(before);
        const want = oracle(rec.op, rec.owner, before);
        expect({ i, result: rec.result, after: rec.after }).toEqual({ i, ...want });
        if (rec.op === 'take' && rec.result === 0) takeRefusedByDel += 1;
        if (rec.op.startsWith('claim') && rec.result === 0) contestedClaims += 1;
        state.set(rec.key, rec.after);
      }
      // The race must actually have contended, or the replay proves little.
      expect(takeRefusedByDel).toBeGreaterThan(0);
      expect(contestedClaims).toBeGreaterThan(0);
      expect(new Set(history.map((r) => r.owner)).size).toBe(workers);
      const switches = history.filter((r, i) => i > 0 && history[i - 1]!.owner !== r.owner).length;
      expect(switches).toBeGreaterThan(workers * 10);

      // 2. Every process observed exactly what the server history says it got, in its own order.
      const layout = keyLayout({ keyPrefix: prefix });
      for (const view of views) {
        const mine = history.filter((r) => r.owner === view.ownerId);
        expect(
          mine.map((r) => ({ op: r.op, id: r.key, result: RESULT_OF[r.op](r.result) })),
        ).toEqual(
          view.results.map((r) => ({ op: r.op, id: layout.leaseKey(r.id), result: r.result })),
        );
      }

      // 3. The final values in Redis are the replay's final state: one holder per lease.
      for (const id of ids) {
        const key = layout.leaseKey(id);
        expect((await admin.get(key)) ?? '').toBe(state.get(key) ?? '');
      }
    } finally {
      await admin.del(
        historyKey,
        ...ids.map((id) => keyLayout({ keyPrefix: prefix }).leaseKey(id)),
      );
    }
  }, 120_000);
});
