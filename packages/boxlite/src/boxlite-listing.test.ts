import { AbortedError } from '@sbx/core';
import { disposedAfterEach, rejectionOf } from '@sbx/core/testing';
import { describe, expect, it } from 'vitest';
import { BoxliteProvider } from './boxlite-provider.js';
import type { SdkBoxInfo, SdkModule } from './sdk-runtime.js';
import type { FakeRuntimeMethod } from './testing/fake-boxlite-runtime.js';
import type { Harness } from './testing/harness.js';
import { boxliteConfig, harness as makeHarness } from './testing/harness.js';

// `listSandboxes`, the capability behind `sbx ls`, over the in-memory runtime. Several providers
// share one fake runtime the way processes share a BoxLite home. The rules every listing provider
// shares (listing only, no `reapOrphans`; read-only; abort) run in
// boxlite-inspection-contract.test.ts; these are the BoxLite-specific checks.

const harness = disposedAfterEach(makeHarness);

/** Wall-clock time the fake runtime stamps on every box it creates. */
const CREATED_MS = Date.UTC(2026, 0, 2, 3, 4, 5);

const MUTATING: readonly FakeRuntimeMethod[] = ['create', 'get', 'exec', 'stop'];

function mutatingCalls(h: Harness): Record<string, number> {
  return Object.fromEntries(MUTATING.map((m) => [m, h.runtime.gate.count(m)]));
}

/** Another provider on the same runtime, as `sbx ls` or a peer gateway would build it. */
function peerOf(h: Harness, section: Record<string, unknown> = {}): BoxliteProvider {
  return new BoxliteProvider({
    config: boxliteConfig(section),
    runtime: h.runtime,
    clock: h.clock,
    logger: h.logger,
    background: false,
  });
}

describe('BoxliteProvider.listSandboxes', () => {
  it('an inspecting provider (background: false) arms no idle timer, even with an idle timeout', () => {
    const h = harness();
    const timers = h.clock.pendingTimers;
    const inspecting = peerOf(h, { idle_timeout: 600 });
    expect(inspecting.idleCheckerRunning).toBe(false);
    expect(h.clock.pendingTimers).toBe(timers);
  });

  it('shows active and warm boxes as this instance sees them, with their identity', async () => {
    const h = harness({}, {}, { now: () => CREATED_MS });
    const active = await h.provider.acquire({ userId: 'u1', threadId: 't1' });
    const warm = await h.provider.acquire({ userId: 'u1', threadId: 't2' });
    await h.clock.advance(5_000);
    await h.provider.release(warm);
    const releasedAt = new Date(h.clock.now()).toISOString();

    const listed = await h.provider.listSandboxes();

    const byId = new Map(listed.map((s) => [s.id, s]));
    expect([...byId.keys()].sort()).toEqual([active, warm].sort());
    expect(byId.get(active)).toEqual({
      id: active,
      userId: 'u1',
      threadId: 't1',
      state: 'active',
      updatedAt: new Date(CREATED_MS).toISOString(),
      location: `sbx-boxlite-${active}`,
    });
    expect(byId.get(warm)).toEqual({
      id: warm,
      userId: 'u1',
      threadId: 't2',
      state: 'warm',
      updatedAt: releasedAt,
      location: `sbx-boxlite-${warm}`,
    });
  });

  it("shows another instance's box with the runtime's state, and no box that is not named by this prefix", async () => {
    const h = harness({}, {}, { now: () => CREATED_MS });
    // Ours first: the first acquire's start-up reconciliation would adopt a box already there.
    const ours = await h.provider.acquire({ userId: 'u1', threadId: 't1' });
    const other = peerOf(h);
    const theirs = await other.acquire({ userId: 'u2', threadId: 't9' });
    // Not ours: another application's box, another deployment's prefix, the bare prefix.
    await h.runtime.seed('postgres-dev');
    await h.runtime.seed(`deer-flow-boxlite-${ours}`);
    await h.runtime.seed('sbx-boxlite-');

    const listed = await h.provider.listSandboxes();

    expect(listed.map((s) => s.id).sort()).toEqual([ours, theirs].sort());
    // The name carries only the hashed id: the peer's (user, thread) is not knowable here.
    expect(listed.find((s) => s.id === theirs)).toEqual({
      id: theirs,
      state: 'running',
      updatedAt: new Date(CREATED_MS).toISOString(),
      location: `sbx-boxlite-${theirs}`,
    });
    expect((await other.listSandboxes()).find((s) => s.id === theirs)).toMatchObject({
      userId: 'u2',
      threadId: 't9',
      state: 'active',
    });
    await other.shutdown();
  });

  it('with another name prefix lists that deployment only', async () => {
    const h = harness();
    await h.runtime.seed('deer-flow-boxlite-0123456789abcdef');
    await h.provider.acquire({ userId: 'u1', threadId: 't1' });
    const reference = peerOf(h, { boxlite: { name_prefix: 'deer-flow-boxlite-' } });

    const listed = await reference.listSandboxes();

    expect(listed.map((s) => s.id)).toEqual(['0123456789abcdef']);
    await reference.shutdown();
  });

  it('touches nothing: no box adopted, checked, started or stopped, even by a fresh process that shuts down after', async () => {
    const h = harness();
    const mine = await h.provider.acquire({ userId: 'u1', threadId: 't1' });
    const parked = await h.provider.acquire({ userId: 'u1', threadId: 't2' });
    await h.provider.release(parked);
    const leftover = await h.runtime.seed('sbx-boxlite-feedfacecafebeef');
    const before = mutatingCalls(h);
    const inspector = peerOf(h);

    const listed = await inspector.listSandboxes();
    await h.provider.listSandboxes();
    await inspector.shutdown();

    expect(listed.map((s) => s.id).sort()).toEqual([mine, parked, 'feedfacecafebeef'].sort());
    // An adopting listing would have parked the leftover box in the inspector's warm pool, and
    // its shutdown would have stopped it (and every other box it adopted).
    expect(inspector.warmIds).toEqual([]);
    expect(mutatingCalls(h)).toEqual(before);
    expect(leftover.running).toBe(true);
    expect(h.runtime.boxes.size).toBe(3);
    expect(h.provider.activeIds).toEqual([mine]);
    expect(h.provider.warmIds).toEqual([parked]);
  });

  it('leaves the start-up reconciliation to the first acquire of a listing instance', async () => {
    const h = harness();
    await h.runtime.seed('sbx-boxlite-feedfacecafebeef');
    expect((await h.provider.listSandboxes()).map((s) => s.state)).toEqual(['running']);
    expect(h.provider.warmIds).toEqual([]);

    await h.provider.acquire({ userId: 'u1', threadId: 't1' });

    expect(h.provider.warmIds).toEqual(['feedfacecafebeef']);
    const adopted = (await h.provider.listSandboxes()).find((s) => s.id === 'feedfacecafebeef');
    // Adopted with its identity unknown.
    expect(adopted).toMatchObject({ state: 'warm' });
    expect(adopted?.userId).toBeUndefined();
  });

  it('a listing during the start-up reconciliation waits for it: an adopting box shows as warm, not half-way', async () => {
    const h = harness();
    await h.runtime.seed('sbx-boxlite-feedfacecafebeef');
    h.runtime.gate.pause('get', { times: 1 });
    const acquiring = h.provider.acquire({ userId: 'u1', threadId: 't1' });
    const adopting = await h.runtime.gate.nextCall('get');
    const listing = h.provider.listSandboxes();
    await adopting.release();
    await acquiring;
    const adopted = (await listing).find((s) => s.id === 'feedfacecafebeef');
    expect(adopted).toMatchObject({ state: 'warm' });
  });

  it('reports a runtime that cannot list instead of an empty list', async () => {
    const h = harness();
    await h.provider.acquire({ userId: 'u1', threadId: 't1' });
    h.runtime.listFailures.push(new Error('boxlite engine unreachable'));
    await expect(h.provider.listSandboxes()).rejects.toThrow('boxlite engine unreachable');
    expect(await h.provider.listSandboxes()).toHaveLength(1);
  });

  it('honours an aborted signal before reading the runtime', async () => {
    const h = harness();
    const controller = new AbortController();
    controller.abort();
    const error = await rejectionOf(h.provider.listSandboxes({ signal: controller.signal }));
    expect(error).toBeInstanceOf(AbortedError);
    expect(h.runtime.gate.count('list')).toBe(0);
  });

  it('honours a signal aborted while the runtime lists', async () => {
    const h = harness();
    await h.provider.acquire({ userId: 'u1', threadId: 't1' });
    h.runtime.gate.pause('list', { times: 1 });
    const controller = new AbortController();
    const listing = h.provider.listSandboxes({ signal: controller.signal });
    const held = await h.runtime.gate.nextCall('list');
    controller.abort();
    await held.release();
    expect(await rejectionOf(listing)).toBeInstanceOf(AbortedError);
  });

  it('is refused after shutdown', async () => {
    const h = harness();
    await h.provider.shutdown();
    await expect(h.provider.listSandboxes()).rejects.toThrow(/shut down/);
  });
});

describe('listing through the SDK runtime adapter', () => {
  /** A provider on the real adapter over a scripted `JsBoxlite` whose only content is `infos`. */
  function onSdk(infos: SdkBoxInfo[]) {
    const calls: string[] = [];
    const runtime = {
      create: () => Promise.reject(new Error('not expected')),
      get: (name: string) => {
        calls.push(`get ${name}`);
        return Promise.resolve(null);
      },
      listInfo: () => {
        calls.push('listInfo');
        return Promise.resolve(infos);
      },
      close: () => {
        calls.push('close');
      },
    };
    const mod = {
      JsBoxlite: Object.assign(
        function JsBoxlite() {
          return runtime;
        },
        { withDefaultConfig: () => runtime },
      ),
    } as unknown as SdkModule;
    const provider = new BoxliteProvider({
      config: boxliteConfig(),
      platform: 'linux',
      fsAccess: async () => {},
      importer: async () => mod,
      background: false,
    });
    return { provider, calls };
  }

  it("maps the runtime's box info (status, start time) and reads nothing else", async () => {
    const { provider, calls } = onSdk([
      {
        id: 'box-1',
        name: 'sbx-boxlite-0011223344556677',
        state: { status: 'stopped', running: false },
        createdAt: '2026-01-02T03:04:05Z',
      },
      {
        id: 'box-2',
        name: 'sbx-boxlite-8899aabbccddeeff',
        state: { status: 'running', running: true },
        createdAt: '2026-01-02T03:04:05Z',
        startedAt: '2026-01-03T00:00:00+01:00',
      },
      { id: 'box-3', state: { status: 'running', running: true }, createdAt: 'not a time' },
    ]);

    const listed = await provider.listSandboxes();
    await provider.shutdown();

    expect(listed).toEqual([
      {
        id: '0011223344556677',
        state: 'stopped',
        updatedAt: '2026-01-02T03:04:05.000Z',
        location: 'sbx-boxlite-0011223344556677',
      },
      {
        id: '8899aabbccddeeff',
        state: 'running',
        updatedAt: '2026-01-02T23:00:00.000Z',
        location: 'sbx-boxlite-8899aabbccddeeff',
      },
    ]);
    // No `get` (the adoption path): the listing process shuts down without owning any box.
    expect(calls).toEqual(['listInfo', 'close']);
  });
});
