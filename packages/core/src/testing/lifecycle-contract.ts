import { expect, it } from 'vitest';
import type { SandboxProvider } from '../contract/sandbox-provider.js';
import type { SnapshotRef } from '../contract/sandbox-lifecycle.js';
import { describeProviderSuite, errorCode as codeOf, threadIds } from './provider-suite.js';
import type { ProviderUnderTest } from './provider-suite.js';

const thread = threadIds('lifecycle');
const PROBE = '/mnt/user-data/workspace/lifecycle-probe.txt';

async function outcome(promise: Promise<unknown>): Promise<{ ok: true } | { error: unknown }> {
  try {
    await promise;
    return { ok: true };
  } catch (error) {
    return { error };
  }
}

async function sandboxOf(provider: SandboxProvider, id: string) {
  const sandbox = provider.get(id);
  if (!sandbox) throw new Error(`provider.get(${id}) is undefined right after acquire`);
  return sandbox;
}

/**
 * Pause/resume and snapshot/fromSnapshot, as each provider declares them in `lifecycleSupport`:
 * a capability whose flag is false is refused with `CAPABILITY_NOT_SUPPORTED` (and leaves the
 * sandbox working); one whose flag is true works. Never a silent emulation either way.
 */
export function describeLifecycleContract(
  name: string,
  make: () => Promise<ProviderUnderTest>,
): void {
  describeProviderSuite(`SandboxProvider lifecycle contract: ${name}`, make, (provider) => {
    it('declares its lifecycle capabilities as flags', () => {
      expect(typeof provider().lifecycleSupport.pause).toBe('boolean');
      expect(typeof provider().lifecycleSupport.snapshot).toBe('boolean');
    });

    it('pause and resume: refused with a typed error, or the sandbox keeps its files across them', async () => {
      const id = await provider().acquire({ userId: 'u1', threadId: thread('pause') });
      await (await sandboxOf(provider(), id)).writeFile(PROBE, 'before pause\n');
      const paused = await outcome(provider().pause(id));
      if (!provider().lifecycleSupport.pause) {
        expect('error' in paused && codeOf(paused.error)).toBe('CAPABILITY_NOT_SUPPORTED');
        const resumed = await outcome(provider().resume(id));
        expect('error' in resumed && codeOf(resumed.error)).toBe('CAPABILITY_NOT_SUPPORTED');
      } else {
        expect(paused).toEqual({ ok: true });
        await provider().resume(id);
      }
      // Either way the sandbox still serves its thread, with its data.
      expect(await (await sandboxOf(provider(), id)).readFile(PROBE)).toBe('before pause\n');
    });

    it("pause: an acquire of a paused sandbox's thread resumes it, and a resume after that is fine", async () => {
      if (!provider().lifecycleSupport.pause) return;
      const threadId = thread('pause-acquire');
      const id = await provider().acquire({ userId: 'u1', threadId });
      await (await sandboxOf(provider(), id)).writeFile(PROBE, 'kept while paused\n');
      await provider().pause(id);
      // Transparent: the thread's next acquire hands its sandbox out running, with its data.
      const again = await provider().acquire({ userId: 'u1', threadId });
      expect(again).toBe(id);
      expect(await (await sandboxOf(provider(), again)).readFile(PROBE)).toBe(
        'kept while paused\n',
      );
      // Resuming what is already running is not an error (two resumes racing both succeed).
      await provider().resume(id);
      expect(await (await sandboxOf(provider(), id)).readFile(PROBE)).toBe('kept while paused\n');
    });

    it('snapshot: refused with a typed error, or a fork starts with the files and diverges from its source', async () => {
      const source = await provider().acquire({ userId: 'u1', threadId: thread('snap-src') });
      const sourceBox = await sandboxOf(provider(), source);
      await sourceBox.writeFile(PROBE, 'at snapshot\n');
      const taken = provider().snapshot(source);
      if (!provider().lifecycleSupport.snapshot) {
        const refused = await outcome(taken);
        expect('error' in refused && codeOf(refused.error)).toBe('CAPABILITY_NOT_SUPPORTED');
        return;
      }
      const ref = await taken;
      expect(typeof ref.id).toBe('string');
      expect(typeof ref.provider).toBe('string');
      await sourceBox.writeFile(PROBE, 'source moved on\n');
      const fork = await provider().acquire({
        userId: 'u1',
        threadId: thread('snap-fork'),
        fromSnapshot: ref,
      });
      expect(fork).not.toBe(source);
      const forkBox = await sandboxOf(provider(), fork);
      expect(await forkBox.readFile(PROBE)).toBe('at snapshot\n');
      await forkBox.writeFile(PROBE, 'fork diverged\n');
      expect(await sourceBox.readFile(PROBE)).toBe('source moved on\n');
    });

    it('acquire fromSnapshot: refused with a typed error, or a forged snapshot reference is', async () => {
      // Built at run time: a reference naming a path, not an id this provider made.
      const forged: SnapshotRef = {
        provider: 'local',
        id: ['..', '..', 'etc'].join('/'),
        createdAt: new Date(0).toISOString(),
      };
      const threadId = thread('forged');
      const refused = await outcome(
        provider().acquire({ userId: 'u1', threadId, fromSnapshot: forged }),
      );
      expect('error' in refused).toBe(true);
      const code = 'error' in refused ? codeOf(refused.error) : undefined;
      if (!provider().lifecycleSupport.snapshot) {
        expect(code).toBe('CAPABILITY_NOT_SUPPORTED');
      } else {
        expect(['INVALID_ARGUMENT', 'SNAPSHOT_NOT_FOUND']).toContain(code);
      }
      // Refused before anything was made: the thread acquires as new, without the snapshot.
      const fresh = await provider().acquire({ userId: 'u1', threadId });
      expect(await outcome((await sandboxOf(provider(), fresh)).readFile(PROBE))).not.toEqual({
        ok: true,
      });
    });
  });
}
