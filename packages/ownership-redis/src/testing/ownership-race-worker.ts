/**
 * One contender of the multi-process race test, run as its own Node process (bundled by the test).
 * argv: JSON { url, keyPrefix, historyKey, ownerId, ids, ops, seed, startAt }.
 * Runs `ops` random operations on random ids, one at a time, and prints one JSON line:
 * { ownerId, results: [{ op, id, result }] } in issue order.
 */
import { Redis } from 'ioredis';
import { recommendedRedisOptions } from '../redis-connection.js';
import { createRedisOwnershipStore } from '../redis-ownership-store.js';

interface WorkerArgs {
  url: string;
  keyPrefix: string;
  historyKey: string;
  ownerId: string;
  ids: string[];
  ops: number;
  seed: number;
  startAt: number;
}

const OPS = ['take', 'claim', 'claim-destroy', 'renew', 'release'] as const;

function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 4294967296;
  };
}

async function main(): Promise<void> {
  const args = JSON.parse(process.argv[2] ?? '{}') as WorkerArgs;
  // A static import, so the bundle carries ioredis (the store's lazy import cannot be bundled).
  const client = new Redis(args.url, recommendedRedisOptions());
  const store = await createRedisOwnershipStore({
    client,
    keyPrefix: args.keyPrefix,
    ownerId: args.ownerId,
    ttlSeconds: 120,
    historyKey: args.historyKey,
  });
  const random = rng(args.seed);
  // Connect before the start line so every contender begins racing at once.
  await store.owner(args.ids[0]!);
  while (Date.now() < args.startAt) await new Promise((r) => setTimeout(r, 1));
  const results: { op: string; id: string; result: unknown }[] = [];
  for (let i = 0; i < args.ops; i++) {
    const op = OPS[Math.floor(random() * OPS.length)]!;
    const id = args.ids[Math.floor(random() * args.ids.length)]!;
    let result: unknown;
    if (op === 'take') result = await store.take(id);
    else if (op === 'claim') result = await store.claim(id);
    else if (op === 'claim-destroy') result = await store.claim(id, { forDestroy: true });
    else if (op === 'renew') result = await store.renew(id);
    else {
      await store.release(id);
      result = null;
    }
    results.push({ op, id, result });
  }
  await store.close();
  await client.quit();
  process.stdout.write(`${JSON.stringify({ ownerId: args.ownerId, results })}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
