import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../errors/errors.js';
import type { Logger } from '../logging/logger.js';
import { Deferred, settle, track } from '../testing/deferred.js';
import { ManualClock } from '../testing/manual-clock.js';
import type { WarmPoolDestroyReason, WarmPoolOptions } from './warm-pool.js';
import {
  DEFAULT_IDLE_CHECK_INTERVAL_SECONDS,
  DEFAULT_IDLE_TIMEOUT_SECONDS,
  DEFAULT_REPLICAS,
  WarmPool,
} from './warm-pool.js';

type Line = { level: string; msg: string };

function recordingLogger(): Logger & { lines: Line[] } {
  const lines: Line[] = [];
  const at = (level: string) => (msg: string) => void lines.push({ level, msg });
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

interface Harness {
  pool: WarmPool<string>;
  clock: ManualClock;
  logger: ReturnType<typeof recordingLogger>;
  destroyed: [string, WarmPoolDestroyReason][];
  /** Set per id to make its next destroy fail (throw) or refuse (false). */
  failing: Map<string, 'throw' | 'refuse'>;
  /** Set per id to hold its destroy until the test resolves the deferred. */
  holding: Map<string, Deferred>;
}

function harness(options: Partial<WarmPoolOptions<string>> = {}): Harness {
  const clock = new ManualClock(1_000_000);
  const logger = recordingLogger();
  const destroyed: [string, WarmPoolDestroyReason][] = [];
  const failing = new Map<string, 'throw' | 'refuse'>();
  const holding = new Map<string, Deferred>();
  const pool = new WarmPool<string>({
    clock,
    logger,
    destroy: async (entry, reason) => {
      const hold = holding.get(entry.id);
      if (hold) await hold.promise;
      const mode = failing.get(entry.id);
      failing.delete(entry.id);
      if (mode === 'throw') throw new Error(`stop of ${entry.id} failed`);
      if (mode === 'refuse') return false;
      destroyed.push([entry.id, reason]);
      return true;
    },
    ...options,
  });
  return { pool, clock, logger, destroyed, failing, holding };
}

describe('WarmPool', () => {
  it('defaults: idle timeout 600 s, check interval 60 s, 3 replicas', () => {
    expect([
      DEFAULT_IDLE_TIMEOUT_SECONDS,
      DEFAULT_IDLE_CHECK_INTERVAL_SECONDS,
      DEFAULT_REPLICAS,
    ]).toEqual([600, 60, 3]);
    const pool = new WarmPool({ destroy: async () => {} });
    expect([pool.idleTimeoutSeconds, pool.checkIntervalSeconds, pool.replicas]).toEqual([
      600, 60, 3,
    ]);
    expect(() => new WarmPool({ destroy: async () => {}, replicas: -1 })).toThrow(
      InvalidArgumentError,
    );
    expect(() => new WarmPool({ destroy: async () => {}, idleTimeoutSeconds: Number.NaN })).toThrow(
      InvalidArgumentError,
    );
    expect(() => new WarmPool({ destroy: async () => {}, idleTimeoutSeconds: -1 })).toThrow(
      InvalidArgumentError,
    );
    expect(() => new WarmPool({ destroy: async () => {}, checkIntervalSeconds: -1 })).toThrow(
      InvalidArgumentError,
    );
  });

  it('replica count is active + warm (§9.9 #176, §8.5 #108)', () => {
    const { pool } = harness({ replicas: 2 });
    pool.put('w1', 'info');
    expect(pool.replicaCount(1)).toEqual({ replicas: 2, total: 2 });
  });

  it('eviction destroys the oldest entry with reason replica_enforcement; an empty pool evicts nothing (§9.9 #177, §8.5 #109)', async () => {
    const { pool, clock, destroyed } = harness();
    expect(await pool.evictOldest()).toBeUndefined();
    expect(destroyed).toEqual([]);
    pool.put('first', 'a');
    await clock.advance(1_000);
    pool.put('second', 'b');
    expect(await pool.evictOldest()).toBe('first');
    expect(destroyed).toEqual([['first', 'replica_enforcement']]);
    expect(pool.ids()).toEqual(['second']);
  });

  it('expiry destroys only entries idle past the timeout with reason idle_timeout; timeout 0 destroys nothing (§9.9 #178, §8.5 #110)', async () => {
    const { pool, clock, destroyed } = harness({ idleTimeoutSeconds: 600 });
    pool.put('old', 'a');
    await clock.advance(300_000);
    pool.put('young', 'b');
    await clock.advance(300_001);
    expect(await pool.reapExpired()).toEqual(['old']);
    expect(destroyed).toEqual([['old', 'idle_timeout']]);
    expect(pool.ids()).toEqual(['young']);

    await clock.advance(10_000_000);
    expect(await pool.reapExpired(0)).toEqual([]);
    const keepForever = harness({ idleTimeoutSeconds: 0 });
    keepForever.pool.put('x', 'v');
    await keepForever.clock.advance(10_000_000_000);
    expect(await keepForever.pool.reapExpired()).toEqual([]);
    expect(keepForever.destroyed).toEqual([]);
  });

  it('the idle checker runs every check interval on the injected clock, unref’d, and stops on request (§9.9 #179, §8.5 #111)', async () => {
    const { pool, clock, destroyed } = harness({
      idleTimeoutSeconds: 100,
      checkIntervalSeconds: 30,
    });
    pool.put('a', 'v');
    pool.start();
    pool.start(); // no second timer
    expect(pool.idleCheckerRunning).toBe(true);
    expect(clock.pendingTimers).toBe(1);
    expect(clock.refTimers).toBe(0); // never keeps the host process alive
    await clock.advance(90_000); // passes at 30 s, 60 s, 90 s: not yet expired
    expect(destroyed).toEqual([]);
    await clock.advance(30_000); // pass at 120 s: idle 120 s > 100 s
    expect(destroyed).toEqual([['a', 'idle_timeout']]);
    await pool.stop();
    expect(pool.idleCheckerRunning).toBe(false);
    expect(clock.pendingTimers).toBe(0);
    pool.put('b', 'v');
    await clock.advance(1_000_000);
    expect(pool.ids()).toEqual(['b']);
  });

  it('a failed destroy keeps the entry, logs, and the next pass retries it', async () => {
    const { pool, clock, destroyed, failing, logger } = harness({
      idleTimeoutSeconds: 10,
      checkIntervalSeconds: 60,
    });
    pool.put('sb', 'v');
    failing.set('sb', 'throw');
    pool.start();
    await clock.advance(60_000);
    expect(pool.ids()).toEqual(['sb']);
    expect(pool.isReserved('sb')).toBe(false);
    expect(logger.lines).toContainEqual({
      level: 'error',
      msg: 'Failed to destroy warm sandbox; keeping it for a later pass',
    });
    failing.set('sb', 'refuse'); // e.g. a peer owns it now
    await clock.advance(60_000);
    expect(pool.ids()).toEqual(['sb']);
    await clock.advance(60_000);
    expect(destroyed).toEqual([['sb', 'idle_timeout']]);
    expect(pool.size).toBe(0);
    await pool.stop();
  });

  it('ensureCapacity evicts only warm entries, oldest first, and logs the soft cap when active alone fills it', async () => {
    const { pool, clock, destroyed, logger } = harness({ replicas: 3 });
    pool.put('w-old', 'a');
    await clock.advance(1_000);
    pool.put('w-new', 'b');
    // 1 active + 2 warm = 3 ≥ 3: one eviction makes room.
    expect(await pool.ensureCapacity(1, 'incoming')).toEqual({
      replicas: 3,
      evicted: ['w-old'],
      overSoftCap: false,
    });
    expect(destroyed).toEqual([['w-old', 'replica_enforcement']]);
    expect(logger.lines.at(-1)).toEqual({
      level: 'info',
      msg: 'Evicted warm sandbox w-old to stay within 3 replicas',
    });
    // 3 active: warm entries go, and creation proceeds beyond the soft cap with a warning.
    expect(await pool.ensureCapacity(3, 'sb-4')).toEqual({
      replicas: 3,
      evicted: ['w-new'],
      overSoftCap: true,
    });
    expect(logger.lines.at(-1)).toEqual({
      level: 'warn',
      msg: 'All 3 replica slots are in active use; creating sandbox sb-4 beyond the soft limit',
    });
    expect(pool.size).toBe(0);
  });

  it('eviction moves on to the next-oldest entry when the oldest cannot be destroyed', async () => {
    const { pool, clock, destroyed, failing } = harness({ replicas: 2 });
    pool.put('peer-owned', 'a');
    await clock.advance(1_000);
    pool.put('ours', 'b');
    failing.set('peer-owned', 'refuse');
    expect(await pool.evictOldest()).toBe('ours');
    expect(destroyed).toEqual([['ours', 'replica_enforcement']]);
    expect(pool.ids()).toEqual(['peer-owned']);
  });

  it('ensureCapacity stops when nothing more can be evicted (refused destroys keep their entries)', async () => {
    const { pool, failing } = harness({ replicas: 1 });
    pool.put('peer-owned', 'a');
    failing.set('peer-owned', 'refuse');
    const result = await pool.ensureCapacity(0, 'new');
    expect(result).toEqual({ replicas: 1, evicted: [], overSoftCap: true });
    expect(pool.ids()).toEqual(['peer-owned']);
  });

  it('an idle pass runs the provider hook before expiry; hook failures are logged and expiry still runs', async () => {
    const order: string[] = [];
    const { pool, clock, logger } = harness({
      idleTimeoutSeconds: 1,
      onIdleCheck: async () => {
        order.push('hook');
        throw new Error('reconcile failed');
      },
      destroy: async (entry) => void order.push(`destroy ${entry.id}`),
    });
    pool.put('sb', 'v');
    await clock.advance(5_000);
    await pool.runIdleCheck();
    expect(order).toEqual(['hook', 'destroy sb']);
    expect(logger.lines.map((l) => l.msg)).toContain('Warm pool idle check failed');
  });

  it('concurrent idle passes share the pass in flight (passes never overlap)', async () => {
    let hooks = 0;
    const gate = new Deferred();
    const { pool } = harness({
      onIdleCheck: async () => {
        hooks += 1;
        await gate.promise;
      },
    });
    const a = pool.runIdleCheck();
    const b = pool.runIdleCheck();
    expect(a).toBe(b);
    gate.resolve();
    await a;
    expect(hooks).toBe(1);
    await pool.runIdleCheck();
    expect(hooks).toBe(2);
  });

  it('stop() waits for a pass in flight', async () => {
    const gate = new Deferred();
    const { pool, clock } = harness({ checkIntervalSeconds: 1, onIdleCheck: () => gate.promise });
    pool.start();
    const advancing = clock.advance(1_000);
    await settle();
    const stopping = track(pool.stop());
    await settle();
    expect(stopping.settled).toBe(false);
    gate.resolve();
    await advancing;
    await stopping.promise;
    expect(clock.pendingTimers).toBe(0);
  });

  it('destroyAll destroys every entry with reason shutdown and keeps those it cannot destroy', async () => {
    const { pool, destroyed, failing, clock } = harness();
    pool.put('a', '1');
    pool.put('b', '2');
    failing.set('b', 'throw');
    pool.start();
    expect(await pool.destroyAll()).toEqual(['a']);
    expect(destroyed).toEqual([['a', 'shutdown']]);
    expect(pool.ids()).toEqual(['b']);
    expect(clock.pendingTimers).toBe(0);
  });
});
