import { describe, expect, it } from 'vitest';
import { Deferred, settle, track } from '../testing/deferred.js';
import { ManualClock } from '../testing/manual-clock.js';
import { recordingLogger } from '../testing/recording-logger.js';
import { rejectionOf } from '../testing/rejection.js';
import type { WarmPoolDestroyReason } from './warm-pool.js';
import type { WarmPoolSettings } from './warm-pool-registry.js';
import { WarmPoolRegistry } from './warm-pool-registry.js';

function registry(settings: Partial<WarmPoolSettings> = {}, background?: boolean) {
  const clock = new ManualClock(1_000_000);
  const logger = recordingLogger();
  const destroyed: [string, WarmPoolDestroyReason][] = [];
  const vms = new WarmPoolRegistry<string, string>({
    name: 'test-pool',
    settings: { idleTimeoutSeconds: 0, idleCheckIntervalSeconds: 60, replicas: 3, ...settings },
    clock,
    logger,
    destroy: async (entry, reason) => {
      destroyed.push([entry.id, reason]);
    },
    background,
  });
  return { vms, clock, logger, destroyed };
}

describe('WarmPoolRegistry', () => {
  it('starts the idle checker only when there is an idle timeout, and it expires warm entries', async () => {
    expect(registry({ idleTimeoutSeconds: 0 }).vms.idleCheckerRunning).toBe(false);

    const { vms, clock, destroyed } = registry({
      idleTimeoutSeconds: 120,
      idleCheckIntervalSeconds: 30,
    });
    expect(vms.idleCheckerRunning).toBe(true);
    vms.pool.put('a', 'vm-a');
    await clock.advance(120_000);
    expect(vms.warmIds).toEqual(['a']);
    await clock.advance(30_000);
    expect(destroyed).toEqual([['a', 'idle_timeout']]);
    expect(vms.warmIds).toEqual([]);
    await vms.pool.stop();
  });

  it('without background work the idle checker never starts and arms no timer', () => {
    const { vms, clock } = registry({ idleTimeoutSeconds: 120 }, false);
    expect(vms.idleCheckerRunning).toBe(false);
    expect(clock.pendingTimers).toBe(0);
  });

  it('counts active + warm replicas and lists each side', async () => {
    const { vms, clock } = registry({ replicas: 5 });
    vms.active.set('b', 'vm-b');
    vms.pool.put('c', 'vm-c');
    await clock.advance(1);
    vms.pool.put('a', 'vm-a');
    expect(vms.activeIds).toEqual(['b']);
    expect(vms.warmIds).toEqual(['c', 'a']);
    expect(vms.replicaCount()).toEqual({ replicas: 5, total: 3 });
  });

  it('runIdleCheck expires on demand', async () => {
    const { vms, clock, destroyed } = registry({ idleTimeoutSeconds: 10 });
    await vms.pool.stop();
    vms.pool.put('a', 'vm-a');
    await clock.advance(11_000);
    await vms.runIdleCheck();
    expect(destroyed).toEqual([['a', 'idle_timeout']]);
  });

  it('a creation makes room for itself: it evicts the oldest warm entry when active + warm fill the cap', async () => {
    const { vms, clock, destroyed } = registry({ replicas: 2 });
    vms.pool.put('old', 'vm-old');
    await clock.advance(1);
    vms.pool.put('new', 'vm-new');
    const made = await vms.withCreationSlot('x', async () => {
      vms.active.set('x', 'vm-x');
      return 'x';
    });
    expect(made).toBe('x');
    expect(destroyed).toEqual([['old', 'replica_enforcement']]);
    expect(vms.warmIds).toEqual(['new']);
  });

  it('creations in flight hold their slots: a second concurrent creation sees the first and evicts', async () => {
    const { vms, destroyed } = registry({ replicas: 2 });
    vms.pool.put('w', 'vm-w');
    const firstMayFinish = new Deferred();
    const first = track(
      vms.withCreationSlot('a', async () => {
        await firstMayFinish.promise;
        vms.active.set('a', 'vm-a');
      }),
    );
    await settle();
    // active 0 + creating 1 (itself excluded: 0) + warm 1 < 2: the first creation needed no room.
    expect(destroyed).toEqual([]);

    await vms.withCreationSlot('b', async () => {
      vms.active.set('b', 'vm-b');
    });
    // active 0 + creating ('a') 1 + warm 1 reaches 2: the second had to evict.
    expect(destroyed).toEqual([['w', 'replica_enforcement']]);
    firstMayFinish.resolve();
    await first.promise;
    expect(vms.replicaCount()).toEqual({ replicas: 2, total: 2 });
  });

  it('a failed creation gives its slot back and passes the error through', async () => {
    const { vms, destroyed, logger } = registry({ replicas: 2 });
    const boom = new Error('create failed');
    expect(await rejectionOf(vms.withCreationSlot('a', () => Promise.reject(boom)))).toBe(boom);
    vms.pool.put('w', 'vm-w');
    // Had 'a' kept its slot, active 0 + creating 1 + warm 1 would reach the cap and evict 'w'.
    await vms.withCreationSlot('b', async () => {});
    expect(destroyed).toEqual([]);
    expect(logger.text()).not.toContain('beyond the soft limit');
  });

  it('names the pool in its log lines', async () => {
    const { vms, logger } = registry({ replicas: 1 });
    vms.active.set('a', 'vm-a');
    await vms.withCreationSlot('b', async () => {});
    const line = logger.lines.find((l) => l.msg.includes('beyond the soft limit'));
    expect(line?.fields?.pool).toBe('test-pool');
  });
});
