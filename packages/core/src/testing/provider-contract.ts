import { expect, it } from 'vitest';
import { ProviderClosedError, isSbxError } from '../errors/errors.js';
import { hasProviderEvents } from '../contract/provider-events.js';
import type { SandboxProviderEvent } from '../contract/provider-events.js';
import type { SandboxResourceName, SandboxSpec } from '../contract/sandbox-spec.js';
import { describeProviderSuite, threadIds } from './provider-suite.js';
import type { ProviderUnderTest } from './provider-suite.js';

export type { ProviderUnderTest } from './provider-suite.js';

export interface ProviderContractOptions {
  /** The provider supports `acquire()` without a thread (a generic/anonymous sandbox). Default true. */
  anonymousAcquire?: boolean;
  /**
   * An image the provider's configuration allows in `sandbox.spec.images`, for the spec identity
   * test of a provider that honours `spec.image`.
   */
  specImage?: string;
}

/** Two valid values of each resource, for the spec identity tests. */
const RESOURCE_VALUES: Readonly<Record<SandboxResourceName, readonly [number, number]>> = {
  memoryMb: [512, 1024],
  cpus: [1, 2],
  pids: [256, 512],
  diskGb: [5, 10],
};

const thread = threadIds('contract');

/**
 * Lifecycle behaviour every `SandboxProvider` must share. `make` is called once per suite; the
 * suite uses distinct thread ids per test so providers need not be reset between tests.
 */
export function describeProviderContract(
  name: string,
  make: () => Promise<ProviderUnderTest>,
  options: ProviderContractOptions = {},
): void {
  describeProviderSuite(`SandboxProvider contract: ${name}`, make, (provider) => {
    it('acquire returns an id whose sandbox get() returns synchronously', async () => {
      const id = await provider().acquire({ userId: 'u1', threadId: thread('get') });
      const sandbox = provider().get(id);
      expect(sandbox).toBeDefined();
      expect(sandbox).not.toBeInstanceOf(Promise);
      expect(sandbox?.id).toBe(id);
      expect(await sandbox?.executeCommand('echo provider-ok')).toContain('provider-ok');
    });

    it('the same user and thread get the same sandbox; other threads and users do not', async () => {
      const t = thread('same');
      const a = await provider().acquire({ userId: 'u1', threadId: t });
      const b = await provider().acquire({ userId: 'u1', threadId: t });
      const otherThread = await provider().acquire({ userId: 'u1', threadId: thread('other') });
      const otherUser = await provider().acquire({ userId: 'u2', threadId: t });
      expect(b).toBe(a);
      expect(otherThread).not.toBe(a);
      expect(otherUser).not.toBe(a);
    });

    it('attack: a ":" in a user or thread id is refused, typed, so ("acme", "bob:x") never gets the sandbox of ("acme:bob", "x")', async () => {
      // Built at run time: the base token hashes "<user>:<thread>", where these two spellings meet.
      const colon = String.fromCharCode(58);
      const t = thread('colon');
      const attempts = [
        { userId: 'acme', threadId: `bob${colon}${t}` },
        { userId: `acme${colon}bob`, threadId: t },
      ];
      for (const attempt of attempts) {
        const failure = await provider()
          .acquire(attempt)
          .then(
            (id) => `acquired ${id}`,
            (err: unknown) => err,
          );
        expect(isSbxError(failure) && failure.code, JSON.stringify(attempt)).toBe(
          'INVALID_ARGUMENT',
        );
        let admitted: unknown;
        try {
          provider().admit(attempt);
        } catch (err) {
          admitted = err;
        }
        expect(isSbxError(admitted) && admitted.code, JSON.stringify(attempt)).toBe(
          'INVALID_ARGUMENT',
        );
      }
      // The lookalikes the rule lets through stay two tenants.
      const a = await provider().acquire({ userId: 'acme', threadId: `bob-${t}` });
      const b = await provider().acquire({ userId: 'acme-bob', threadId: t });
      expect(a).not.toBe(b);
    });

    it('concurrent acquires for one thread converge on one sandbox', async () => {
      const t = thread('race');
      const ids = await Promise.all(
        Array.from({ length: 8 }, () => provider().acquire({ userId: 'u1', threadId: t })),
      );
      expect(new Set(ids).size).toBe(1);
    });

    it('get() of an unknown id is undefined', () => {
      expect(provider().get('sbx-contract-unknown-id')).toBeUndefined();
    });

    it('a released sandbox can be acquired again for the next turn', async () => {
      const t = thread('turns');
      const first = await provider().acquire({ userId: 'u1', threadId: t });
      await provider().release(first);
      const second = await provider().acquire({ userId: 'u1', threadId: t });
      expect(await provider().get(second)?.executeCommand('echo next-turn')).toContain('next-turn');
    });

    it('files written in one turn are visible in the next turn of the same thread', async () => {
      const t = thread('persist');
      const first = await provider().acquire({ userId: 'u1', threadId: t });
      await provider().get(first)?.writeFile('/mnt/user-data/workspace/keep.txt', 'kept\n');
      await provider().release(first);
      const second = await provider().acquire({ userId: 'u1', threadId: t });
      expect(await provider().get(second)?.readFile('/mnt/user-data/workspace/keep.txt')).toBe(
        'kept\n',
      );
    });

    it('threads do not see each other’s user data', async () => {
      const a = await provider().acquire({ userId: 'u1', threadId: thread('iso-a') });
      const b = await provider().acquire({ userId: 'u1', threadId: thread('iso-b') });
      await provider().get(a)?.writeFile('/mnt/user-data/workspace/secret.txt', 'a-only\n');
      let seen: unknown;
      try {
        seen = await provider().get(b)?.readFile('/mnt/user-data/workspace/secret.txt');
      } catch (err) {
        seen = err;
      }
      expect(seen).not.toBe('a-only\n');
    });

    it('fails closed before acquisition for an explicit skill policy it cannot enforce', () => {
      if (provider().supportsAgentSkillIsolation) return;
      let err: unknown;
      try {
        provider().admit({
          userId: 'u1',
          threadId: thread('policy'),
          skillPolicy: { allowedSkills: [] },
        });
      } catch (e) {
        err = e;
      }
      expect(isSbxError(err) && err.code).toBe('SANDBOX_RUNTIME');
      expect(String((err as Error).message)).toContain(
        'cannot enforce per-Agent skill filesystem isolation',
      );
    });

    if (options.anonymousAcquire ?? true) {
      it('acquire without a thread returns a usable sandbox', async () => {
        const id = await provider().acquire();
        expect(await provider().get(id)?.executeCommand('echo anon')).toContain('anon');
      });
    }

    it('refuses every spec field the provider does not honour, typed, before acquiring', async () => {
      const support = provider().specSupport;
      const refused: SandboxSpec[] = [];
      if (!support.image) refused.push({ image: options.specImage ?? 'contract/image:1' });
      for (const name of Object.keys(RESOURCE_VALUES) as SandboxResourceName[]) {
        if (!support.resources.includes(name)) {
          refused.push({ resources: { [name]: RESOURCE_VALUES[name][0] } });
        }
      }
      if (!support.timeout) refused.push({ timeoutSeconds: 600 });
      if (!support.labels) refused.push({ labels: { 'sbx.dev/tenant': 'contract' } });
      for (const spec of refused) {
        const failure = await provider()
          .acquire({ userId: 'u1', threadId: thread('spec-refused'), spec })
          .then(
            () => undefined,
            (err: unknown) => err,
          );
        expect(isSbxError(failure) && failure.code, JSON.stringify(spec)).toBe('SANDBOX_SPEC');
      }
    });

    it('attack: a resource or timeout past every bound (2^31 pids, 1e300 MiB, a million CPUs) is refused, typed, before acquiring', async () => {
      const support = provider().specSupport;
      // Past the ceilings no configuration lifts, so this holds whatever sandbox.spec.max_* says.
      const huge: Record<SandboxResourceName, number> = {
        pids: 2 ** 31,
        memoryMb: Number(`1e${300}`),
        cpus: 10 ** 6,
        diskGb: 10 ** 9,
      };
      const specs: SandboxSpec[] = support.resources.map((name) => ({
        resources: { [name]: huge[name] },
      }));
      if (support.timeout) specs.push({ timeoutSeconds: Number(`1e${300}`) });
      for (const spec of specs) {
        const failure = await provider()
          .acquire({ userId: 'u1', threadId: thread('spec-huge'), spec })
          .then(
            () => undefined,
            (err: unknown) => err,
          );
        expect(isSbxError(failure) && failure.code, JSON.stringify(spec)).toBe('SANDBOX_SPEC');
      }
    });

    it('a spec changing what the sandbox is names another sandbox; the same spec the same one', async (ctx) => {
      const support = provider().specSupport;
      const resource = (['cpus', 'memoryMb', 'pids'] as const).find((r) =>
        support.resources.includes(r),
      );
      const image = support.image ? options.specImage : undefined;
      if (resource === undefined && image === undefined) {
        ctx.skip();
        return;
      }
      const t = thread('spec-identity');
      const base = await provider().acquire({ userId: 'u1', threadId: t });
      const specA: SandboxSpec = resource
        ? { resources: { [resource]: RESOURCE_VALUES[resource][0] } }
        : { image };
      const specB: SandboxSpec = resource
        ? { resources: { [resource]: RESOURCE_VALUES[resource][1] } }
        : { image, resources: undefined, labels: undefined, timeoutSeconds: undefined };
      const a = await provider().acquire({ userId: 'u1', threadId: t, spec: specA });
      const again = await provider().acquire({ userId: 'u1', threadId: t, spec: specA });
      expect(again).toBe(a);
      expect(a).not.toBe(base);
      if (resource) {
        const b = await provider().acquire({ userId: 'u1', threadId: t, spec: specB });
        expect(b).not.toBe(a);
        expect(b).not.toBe(base);
      }
    });

    it('labels alone do not change which sandbox a thread gets', async (ctx) => {
      if (!provider().specSupport.labels) {
        ctx.skip();
        return;
      }
      const t = thread('spec-labels');
      const plain = await provider().acquire({ userId: 'u1', threadId: t });
      const labelled = await provider().acquire({
        userId: 'u1',
        threadId: t,
        spec: { labels: { 'sbx.dev/tenant': 'contract' } },
      });
      expect(labelled).toBe(plain);
    });

    it('reports every acquire path through SandboxProviderEvents (reuse for the second turn)', async () => {
      const p = provider();
      expect(hasProviderEvents(p)).toBe(true);
      if (!hasProviderEvents(p)) return;
      const events: SandboxProviderEvent[] = [];
      const off = p.onEvent((e) => events.push(e));
      try {
        const t = thread('events');
        const id = await provider().acquire({ userId: 'u1', threadId: t });
        await provider().acquire({ userId: 'u1', threadId: t });
        const paths = events
          .filter((e) => e.type === 'acquire' && e.sandboxId === id)
          .map((e) => (e.type === 'acquire' ? e.path : undefined));
        expect(paths).toHaveLength(2);
        expect(paths[1]).toBe('reuse');
      } finally {
        off();
      }
    });

    // Last: it retires the provider (the reset contract of docs/architecture.md).
    it('reset() retires the instance: further acquires are refused, typed; what it held is released; twice is safe', async () => {
      const id = await provider().acquire({ userId: 'u1', threadId: thread('reset') });
      await provider().reset();
      await provider().reset();
      expect(provider().get(id)).toBeUndefined();
      const refused = await provider()
        .acquire({ userId: 'u1', threadId: thread('after-reset') })
        .then(
          () => undefined,
          (err: unknown) => err,
        );
      expect(refused).toBeInstanceOf(ProviderClosedError);
    });
  });
}
