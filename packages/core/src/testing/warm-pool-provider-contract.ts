import { afterEach, describe, expect, it } from 'vitest';
import { ProviderClosedError } from '../errors/errors.js';
import type { SandboxProvider } from '../contract/sandbox-provider.js';
import { settle, track } from './deferred.js';
import { ManualClock } from './manual-clock.js';
import type { PausedCall } from './pausable.js';
import { recordingLogger } from './recording-logger.js';
import type { RecordingLogger } from './recording-logger.js';
import { rejectionOf } from './rejection.js';

/**
 * A provider that keeps one VM per (user, thread), parks released ones warm and exposes the books
 * of its warm pool (what core's `WarmPoolRegistry` keeps), as BoxLite, Tenki and OpenSandbox do.
 */
export type WarmPoolProvider = SandboxProvider & {
  /** Ids of active (acquired, not released) sandboxes. */
  readonly activeIds: readonly string[];
  /** Ids of warm (released, still running) sandboxes, oldest first. */
  readonly warmIds: readonly string[];
  readonly idleCheckerRunning: boolean;
  /** `(replicas, active + warm)`. */
  replicaCount(): { replicas: number; total: number };
  /** One idle pass now. */
  runIdleCheck(): Promise<void>;
};

/** What the suite hands the factory: build the provider on exactly these. */
export interface WarmPoolContext {
  /** Drives idle expiry and every deadline; the suite advances it. */
  readonly clock: ManualClock;
  /** The provider's logger; the suite reads the warnings and errors it must log. */
  readonly logger: RecordingLogger;
  /** Soft cap on active + warm VMs. */
  readonly replicas: number;
  /** `0` keeps warm VMs until shutdown (no idle checker). */
  readonly idleTimeoutSeconds: number;
  readonly idleCheckIntervalSeconds: number;
}

/** A backend call the suite can hold at its start (see `WarmPoolHarness.hold`). */
export type WarmPoolBackendCall = 'create' | 'destroy';

/**
 * One provider on a fake backend, with a small probe of that backend and the failures the suite
 * injects. `TVm` is the fake's own handle of one VM; the suite only passes it back.
 */
export interface WarmPoolHarness<TVm> {
  readonly provider: WarmPoolProvider;
  /** The VM behind the active sandbox `sandboxId`; throws when it is not active. */
  vmOf(sandboxId: string): TVm;
  /** Whether `vm` still runs: created, and neither stopped nor destroyed. */
  isRunning(vm: TVm): boolean;
  /** VMs the backend was asked to create so far, a create held by `hold('create')` included. */
  createCount(): number;
  /** VMs of this backend that still run. */
  runningCount(): number;
  /**
   * Holds the next backend call of that kind before it runs (`destroy`: whatever stops or deletes
   * a VM). Resolves once the call arrives; the suite releases it.
   */
  hold(call: WarmPoolBackendCall): Promise<PausedCall>;
  /** Makes the next command on `vm` fail the way the provider takes for "this VM is gone". */
  failTerminally(vm: TVm): void;
  /** Makes the next health check the provider runs on `vm` (at a warm reclaim) report it unhealthy. */
  failHealthCheck(vm: TVm): void;
  /** Makes the next destroy of `vm` fail, leaving it running. */
  failDestroy(vm: TVm): void;
  /**
   * Whether a replacement provider finds this provider's VMs again, so `reset()` leaves them
   * running for it (otherwise `reset()` stops them, as `shutdown()` does).
   */
  readonly resetHandsOver: boolean;
  /** Runs after the suite shut the provider down: dispose the fake backend, remove directories. */
  cleanup?(): Promise<void>;
}

const START_MS = 1_700_000_000_000;
const DEFAULTS = { replicas: 3, idleTimeoutSeconds: 600, idleCheckIntervalSeconds: 60 };

/**
 * The conformance suite of the warm-pool lifecycle shared by the micro-VM providers: release parks
 * a VM warm and the same thread reclaims it without a create; a warm VM that fails its reclaim
 * check is replaced; the idle checker destroys only VMs parked past the idle timeout (none with a
 * timeout of 0); `replicas` is a soft cap that evicts the oldest warm VM and never an active one;
 * concurrent acquires of a thread create once; a terminal failure of an active VM makes the next
 * acquire replace it; `reset()` parks active VMs; `shutdown()` destroys everything and closes the
 * provider, also for a release or a creation that arrives meanwhile; a thread-less VM is never
 * parked. `make` is called for every test with a fresh clock, logger and warm-pool settings. Call
 * it at the top level of a test file.
 */
export function describeWarmPoolProviderContract<TVm>(
  name: string,
  make: (context: WarmPoolContext) => Promise<WarmPoolHarness<TVm>>,
): void {
  describe(`${name}: warm-pool provider contract`, () => {
    let made: WarmPoolHarness<TVm>[] = [];

    afterEach(async () => {
      const done = made;
      made = [];
      for (const h of done) {
        await h.provider.shutdown();
        await h.cleanup?.();
      }
    });

    async function setup(settings: Partial<typeof DEFAULTS> = {}) {
      const clock = new ManualClock(START_MS);
      const logger = recordingLogger();
      const h = await make({ clock, logger, ...DEFAULTS, ...settings });
      made.push(h);
      return { h, p: h.provider, clock, logger };
    }

    const thread = (threadId: string) => ({ userId: 'warm-user', threadId });

    it('release parks the VM warm without stopping it; the same thread reclaims it without a create, other threads never', async () => {
      const { h, p } = await setup();
      const id = await p.acquire(thread('t'));
      const vm = h.vmOf(id);
      await p.release(id);
      expect(h.isRunning(vm)).toBe(true);
      expect(p.get(id)).toBeUndefined();
      expect(p.activeIds).toEqual([]);
      expect(p.warmIds).toEqual([id]);

      const other = await p.acquire(thread('other'));
      expect(other).not.toBe(id);
      expect(h.createCount()).toBe(2);
      expect(p.warmIds).toEqual([id]);
      expect(p.replicaCount()).toEqual({ replicas: DEFAULTS.replicas, total: 2 });

      expect(await p.acquire(thread('t'))).toBe(id);
      expect(h.createCount()).toBe(2);
      expect(h.vmOf(id)).toBe(vm);
      expect(p.warmIds).toEqual([]);
      expect(await p.get(id)?.executeCommand('echo reclaimed')).toContain('reclaimed');
    });

    it('a warm VM that fails its reclaim health check is destroyed and replaced under the same id', async () => {
      const { h, p } = await setup();
      const id = await p.acquire(thread('t'));
      const first = h.vmOf(id);
      await p.release(id);
      h.failHealthCheck(first);
      expect(await p.acquire(thread('t'))).toBe(id);
      expect(h.isRunning(first)).toBe(false);
      expect(h.createCount()).toBe(2);
      const second = h.vmOf(id);
      expect(second).not.toBe(first);
      expect(h.isRunning(second)).toBe(true);
      expect(p.warmIds).toEqual([]);
    });

    it('the idle checker destroys, on its interval, only warm VMs parked longer than the idle timeout', async () => {
      const { h, p, clock } = await setup({ idleTimeoutSeconds: 30, idleCheckIntervalSeconds: 10 });
      expect(p.idleCheckerRunning).toBe(true);
      const old = await p.acquire(thread('old'));
      const oldVm = h.vmOf(old);
      await p.release(old);
      await clock.advance(20_000);
      const fresh = await p.acquire(thread('fresh'));
      const freshVm = h.vmOf(fresh);
      await p.release(fresh);
      // Parked exactly the idle timeout: not yet past it.
      await clock.advance(10_000);
      expect(p.warmIds).toEqual([old, fresh]);
      expect(h.isRunning(oldVm)).toBe(true);
      // The next pass, one interval on.
      await clock.advance(10_000);
      expect(p.warmIds).toEqual([fresh]);
      expect(h.isRunning(oldVm)).toBe(false);
      expect(h.isRunning(freshVm)).toBe(true);
      expect(p.idleCheckerRunning).toBe(true);
    });

    it('an idle timeout of 0 starts no idle checker and never expires a warm VM', async () => {
      const { h, p, clock } = await setup({ idleTimeoutSeconds: 0 });
      const id = await p.acquire(thread('t'));
      const vm = h.vmOf(id);
      await p.release(id);
      expect(p.idleCheckerRunning).toBe(false);
      expect(clock.pendingTimers).toBe(0);
      await clock.advance(10 * 24 * 3600 * 1000);
      await p.runIdleCheck();
      expect(p.warmIds).toEqual([id]);
      expect(h.isRunning(vm)).toBe(true);
    });

    it('a new thread at the replica cap evicts the oldest warm VM first, never an active one', async () => {
      const { h, p, clock } = await setup({ replicas: 3 });
      const active = await p.acquire(thread('active'));
      const oldest = await p.acquire(thread('oldest'));
      const newer = await p.acquire(thread('newer'));
      const [activeVm, oldestVm, newerVm] = [h.vmOf(active), h.vmOf(oldest), h.vmOf(newer)];
      await p.release(oldest);
      await clock.advance(1_000);
      await p.release(newer);
      expect(p.replicaCount()).toEqual({ replicas: 3, total: 3 });

      await p.acquire(thread('new'));
      expect(h.isRunning(oldestVm)).toBe(false);
      expect(h.isRunning(newerVm)).toBe(true);
      expect(h.isRunning(activeVm)).toBe(true);
      expect(p.warmIds).toEqual([newer]);
      expect(p.replicaCount()).toEqual({ replicas: 3, total: 3 });
    });

    it('with only active VMs at the cap nothing is evicted: creation goes beyond the soft cap, with a warning', async () => {
      const { h, p, logger } = await setup({ replicas: 1 });
      const a = await p.acquire(thread('a'));
      const b = await p.acquire(thread('b'));
      expect(h.isRunning(h.vmOf(a))).toBe(true);
      expect(h.isRunning(h.vmOf(b))).toBe(true);
      expect(p.activeIds).toHaveLength(2);
      expect(p.replicaCount()).toEqual({ replicas: 1, total: 2 });
      expect(logger.text('warn')).toContain('soft limit');
    });

    it('concurrent acquires for one thread create one VM', async () => {
      const { h, p } = await setup();
      const held = h.hold('create');
      const all = Array.from({ length: 6 }, () => p.acquire(thread('t')));
      const create = await held;
      await settle();
      expect(h.createCount()).toBe(1);
      await create.release();
      expect(new Set(await Promise.all(all)).size).toBe(1);
      expect(h.createCount()).toBe(1);
      expect(h.runningCount()).toBe(1);
    });

    it('a terminal failure of an active VM evicts it; the next acquire replaces it, and the stale adapter cannot evict the replacement', async () => {
      const { h, p } = await setup();
      const id = await p.acquire(thread('t'));
      const vm = h.vmOf(id);
      const stale = p.get(id)!;
      h.failTerminally(vm);
      await rejectionOf(stale.executeCommand('echo hi'));
      expect(p.get(id)).toBeUndefined();
      expect(p.activeIds).toEqual([]);
      await settle();
      expect(h.isRunning(vm)).toBe(false);

      expect(await p.acquire(thread('t'))).toBe(id);
      expect(h.createCount()).toBe(2);
      const replacement = p.get(id);
      expect(replacement).not.toBe(stale);
      expect(h.vmOf(id)).not.toBe(vm);
      await rejectionOf(stale.executeCommand('echo again'));
      await settle();
      expect(p.get(id)).toBe(replacement);
      expect(await replacement?.executeCommand('echo alive')).toContain('alive');
    });

    it('reset() stops background work, releases what the instance holds and refuses further use', async () => {
      const { h, p, clock } = await setup({ idleTimeoutSeconds: 60, idleCheckIntervalSeconds: 10 });
      const a = await p.acquire(thread('a'));
      const b = await p.acquire(thread('b'));
      const [vmA, vmB] = [h.vmOf(a), h.vmOf(b)];
      await p.release(b);
      await p.reset();
      await p.reset();
      expect(p.activeIds).toEqual([]);
      expect(p.warmIds).toEqual([]);
      expect(p.idleCheckerRunning).toBe(false);
      expect(await rejectionOf(p.acquire(thread('a')))).toBeInstanceOf(ProviderClosedError);
      expect(await rejectionOf(p.acquire(thread('new')))).toBeInstanceOf(ProviderClosedError);
      // Left running for a replacement that finds them again, or stopped when none could.
      expect(h.isRunning(vmA)).toBe(h.resetHandsOver);
      expect(h.isRunning(vmB)).toBe(h.resetHandsOver);
      // No reaper of the retired instance stops a VM the replacement may have handed out since.
      await clock.advance(80_000);
      expect(h.isRunning(vmA)).toBe(h.resetHandsOver);
      expect(h.isRunning(vmB)).toBe(h.resetHandsOver);
      expect(h.createCount()).toBe(2);
      // A release of a sandbox handed over, arriving late from the turn that held it, touches nothing.
      await p.release(a);
      expect(h.isRunning(vmA)).toBe(h.resetHandsOver);
    });

    it('shutdown destroys warm and active VMs, stops the idle checker and is idempotent; acquire then rejects', async () => {
      const { h, p, clock } = await setup();
      const warm = await p.acquire(thread('warm'));
      await p.acquire(thread('active'));
      await p.release(warm);
      expect(p.idleCheckerRunning).toBe(true);
      await Promise.all([p.shutdown(), p.shutdown()]);
      await p.shutdown();
      expect(h.runningCount()).toBe(0);
      expect(p.activeIds).toEqual([]);
      expect(p.warmIds).toEqual([]);
      expect(p.idleCheckerRunning).toBe(false);
      expect(clock.pendingTimers).toBe(0);
      expect(await rejectionOf(p.acquire(thread('warm')))).toBeInstanceOf(ProviderClosedError);
      expect(await rejectionOf(p.acquire(thread('new')))).toBeInstanceOf(ProviderClosedError);
      expect(h.createCount()).toBe(2);
      await p.release(warm);
    });

    it('a release that arrives while shutdown is destroying VMs destroys its VM instead of parking it', async () => {
      const { h, p } = await setup();
      const warm = await p.acquire(thread('warm'));
      const active = await p.acquire(thread('active'));
      const activeVm = h.vmOf(active);
      await p.release(warm);
      const held = h.hold('destroy');
      const shutdown = p.shutdown();
      const destroy = await held;
      await p.release(active);
      await destroy.release();
      await shutdown;
      expect(h.isRunning(activeVm)).toBe(false);
      expect(h.runningCount()).toBe(0);
      expect(p.warmIds).toEqual([]);
      expect(p.activeIds).toEqual([]);
    });

    it('a creation that completes after shutdown began destroys its VM and fails the acquire', async () => {
      const { h, p } = await setup();
      const held = h.hold('create');
      const acquiring = track(p.acquire(thread('t')));
      const create = await held;
      const shutdown = p.shutdown();
      await create.release();
      expect(await rejectionOf(acquiring.promise)).toBeInstanceOf(ProviderClosedError);
      await shutdown;
      expect(h.createCount()).toBe(1);
      expect(h.runningCount()).toBe(0);
      expect(p.activeIds).toEqual([]);
      expect(p.warmIds).toEqual([]);
    });

    it('a warm VM the idle checker is destroying is never handed out; its thread gets a new VM', async () => {
      const { h, p, clock } = await setup({ idleTimeoutSeconds: 60, idleCheckIntervalSeconds: 10 });
      const id = await p.acquire(thread('t'));
      const old = h.vmOf(id);
      await p.release(id);
      const held = h.hold('destroy');
      const reaping = clock.advance(70_000);
      const destroy = await held;
      const acquiring = track(p.acquire(thread('t')));
      await settle();
      await destroy.release();
      await reaping;
      expect(await acquiring.promise).toBe(id);
      expect(h.createCount()).toBe(2);
      expect(h.isRunning(old)).toBe(false);
      expect(h.vmOf(id)).not.toBe(old);
      expect(h.isRunning(h.vmOf(id))).toBe(true);
      expect(p.warmIds).toEqual([]);
    });

    it('a warm VM whose destroy fails stays in the pool, with an error logged, and a later pass destroys it', async () => {
      const { h, p, clock, logger } = await setup({
        idleTimeoutSeconds: 60,
        idleCheckIntervalSeconds: 10,
      });
      const id = await p.acquire(thread('t'));
      const vm = h.vmOf(id);
      await p.release(id);
      h.failDestroy(vm);
      await clock.advance(70_000);
      expect(p.warmIds).toEqual([id]);
      expect(h.isRunning(vm)).toBe(true);
      expect(logger.lines.some((l) => l.level === 'error')).toBe(true);
      await clock.advance(10_000);
      expect(p.warmIds).toEqual([]);
      expect(h.isRunning(vm)).toBe(false);
    });

    it('a thread-less acquire gets its own VM, which release destroys instead of parking', async () => {
      const { h, p } = await setup();
      const a = await p.acquire();
      const b = await p.acquire();
      expect(a).not.toBe(b);
      const vm = h.vmOf(a);
      await p.release(a);
      expect(h.isRunning(vm)).toBe(false);
      expect(p.warmIds).toEqual([]);
      expect(p.activeIds).toEqual([b]);
    });
  });
}
