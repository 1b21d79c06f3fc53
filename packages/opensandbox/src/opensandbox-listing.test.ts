import { ConnectionConfig, Sandbox } from '@alibaba-group/opensandbox';
import { AbortedError, SandboxRuntimeError } from '@sbx/core';
import { ManualClock, rejectionOf } from '@sbx/core/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { OpenSandboxProviderConfig } from './opensandbox-config.js';
import {
  LIST_PAGE_SIZE,
  OPENSANDBOX_METADATA,
  OpenSandboxProvider,
} from './opensandbox-provider.js';
import type { OpenSandboxListFilter, OpenSandboxSandboxInfo } from './opensandbox-sdk.js';
import type { FakeOpenSandboxOp } from './testing/fake-opensandbox-sdk.js';
import { FakeOpenSandbox } from './testing/fake-opensandbox-sdk.js';
import { OpenSandboxStandin } from './testing/opensandbox-standin.js';

// `listSandboxes`, the capability behind `sbx ls`: over the in-memory SDK (several providers on one
// fake server, as processes sharing a deployment), then through the real SDK and the stand-in. The
// rules every listing provider shares (listing only, no `reapOrphans`; read-only; abort) run in
// opensandbox-inspection-contract.test.ts; these are the OpenSandbox-specific checks.

const SECURE = { domain: 'opensandbox.test', protocol: 'https', api_key: 'k' };
/** The fake server's wall clock: when every remote is created. */
const CREATED_MS = Date.UTC(2026, 0, 2, 3, 4, 5);
const TAG = { [OPENSANDBOX_METADATA.provider]: 'opensandbox' };

const fakes: FakeOpenSandbox[] = [];
const providers: OpenSandboxProvider[] = [];

afterEach(async () => {
  await Promise.all(providers.splice(0).map((p) => p.shutdown()));
  await Promise.all(fakes.splice(0).map((f) => f.dispose()));
});

function setup(config: OpenSandboxProviderConfig = {}) {
  const fake = new FakeOpenSandbox({ now: () => CREATED_MS });
  fakes.push(fake);
  const clock = new ManualClock(1_000_000);
  const make = (sdk = fake.sdk): OpenSandboxProvider => {
    const provider = new OpenSandboxProvider({
      config: { ...config, opensandbox: config.opensandbox ?? SECURE },
      sdk,
      clock,
      logger: { debug() {}, info() {}, warn() {}, error() {} },
      background: false,
    });
    providers.push(provider);
    return provider;
  };
  const provider = make();
  const remoteOf = (p: OpenSandboxProvider, id: string): string => p.get(id)!.remoteId;
  /** A sandbox some other client of the server made (not through a provider). */
  const foreign = async (metadata: Record<string, string> | undefined): Promise<string> => {
    const remote = await fake.sdk.Sandbox.create({
      image: 'other:1',
      connectionConfig: new fake.sdk.ConnectionConfig({}),
      ...(metadata === undefined ? {} : { metadata }),
      timeoutSeconds: null,
    });
    return remote.id;
  };
  return { fake, clock, provider, make, remoteOf, foreign };
}

const MUTATING: readonly FakeOpenSandboxOp[] = [
  'create',
  'run',
  'renew',
  'kill',
  'close',
  'readBytes',
  'writeFiles',
];

function mutatingCalls(fake: FakeOpenSandbox): Record<string, number> {
  return Object.fromEntries(MUTATING.map((op) => [op, fake.gate.count(op)]));
}

describe('OpenSandboxProvider.listSandboxes', () => {
  it('an inspecting provider (background: false) arms no idle timer, even with an idle timeout', () => {
    const { provider, clock } = setup({ idleTimeout: 600 });
    expect(provider.idleCheckerRunning).toBe(false);
    expect(clock.pendingTimers).toBe(0);
  });

  it('shows active and warm sandboxes as this instance sees them, by their server id', async () => {
    const { provider, clock, remoteOf } = setup({ image: 'sbx-img:2' });
    const active = await provider.acquire({ userId: 'u1', threadId: 't1' });
    const warm = await provider.acquire({ userId: 'u1', threadId: 't2' });
    const activeRemote = remoteOf(provider, active);
    const warmRemote = remoteOf(provider, warm);
    await clock.advance(5_000);
    await provider.release(warm);

    const listed = await provider.listSandboxes();

    const byId = new Map(listed.map((s) => [s.id, s]));
    expect([...byId.keys()].sort()).toEqual([activeRemote, warmRemote].sort());
    expect(byId.get(activeRemote)).toEqual({
      id: activeRemote,
      userId: 'u1',
      threadId: 't1',
      state: 'active',
      updatedAt: new Date(CREATED_MS).toISOString(),
      location: 'opensandbox:sbx-img:2',
    });
    expect(byId.get(warmRemote)).toEqual({
      id: warmRemote,
      userId: 'u1',
      threadId: 't2',
      state: 'warm',
      updatedAt: new Date(1_005_000).toISOString(),
      location: 'opensandbox:sbx-img:2',
    });
  });

  it("shows another instance's sandboxes with their tagged identity and the server's state; never an untagged one", async () => {
    const { fake, provider, make, remoteOf, foreign } = setup();
    const ours = await provider.acquire({ userId: 'u1', threadId: 't1' });
    const other = make();
    const theirs = remoteOf(other, await other.acquire({ userId: 'u2', threadId: 't9' }));
    const theirsAnonymous = remoteOf(other, await other.acquire());
    fake.remote(theirsAnonymous).state = 'Paused';
    // Not ours: untagged, another provider's tag, no metadata at all.
    await foreign({ team: 'data' });
    await foreign({ [OPENSANDBOX_METADATA.provider]: 'someone-else', deer_flow_thread: 't1' });
    await foreign(undefined);

    const listed = await provider.listSandboxes();

    expect(listed.map((s) => s.id).sort()).toEqual(
      [remoteOf(provider, ours), theirs, theirsAnonymous].sort(),
    );
    expect(listed.find((s) => s.id === theirs)).toEqual({
      id: theirs,
      userId: 'u2',
      threadId: 't9',
      state: 'Running',
      updatedAt: new Date(CREATED_MS).toISOString(),
      location: 'opensandbox:python:3.11',
    });
    expect(listed.find((s) => s.id === theirsAnonymous)).toEqual({
      id: theirsAnonymous,
      state: 'Paused',
      updatedAt: new Date(CREATED_MS).toISOString(),
      location: 'opensandbox:python:3.11',
    });
    // Asked of the server by the tag, so unrelated sandboxes never even travel.
    const filters = fake.gate.calls('list').map((c) => c.args[1] as OpenSandboxListFilter);
    expect(
      filters.every((f) => f.metadata?.[OPENSANDBOX_METADATA.provider] === 'opensandbox'),
    ).toBe(true);
    expect(filters.length).toBeGreaterThan(0);
  });

  it('touches nothing: no sandbox renewed, checked or deleted, even by a fresh process that shuts down after', async () => {
    const { fake, provider, make, remoteOf } = setup();
    const active = await provider.acquire({ userId: 'u1', threadId: 't1' });
    const warm = await provider.acquire({ userId: 'u1', threadId: 't2' });
    await provider.release(warm);
    const remotes = [
      remoteOf(provider, active),
      fake.aliveIds.find((id) => id !== remoteOf(provider, active))!,
    ];
    const before = mutatingCalls(fake);
    const inspector = make();

    const listed = await inspector.listSandboxes();
    await provider.listSandboxes();
    await inspector.shutdown();

    expect(listed.map((s) => s.id).sort()).toEqual([...remotes].sort());
    expect(listed.map((s) => s.state).sort()).toEqual(['Running', 'Running']);
    expect(mutatingCalls(fake)).toEqual(before);
    expect(fake.aliveIds.sort()).toEqual([...remotes].sort());
    expect(provider.activeIds).toEqual([active]);
    expect(provider.warmIds).toEqual([warm]);
    // Each listing's own transport is closed after it.
    expect(fake.gate.count('closeManager')).toBe(2);
  });

  it('reads every page once, taking a sandbox that moved between pages once and no untagged one a server let through', async () => {
    const { fake, make } = setup();
    const info = (id: string, thread: string): OpenSandboxSandboxInfo => ({
      id,
      metadata: { ...TAG, [OPENSANDBOX_METADATA.user]: 'u', [OPENSANDBOX_METADATA.thread]: thread },
      status: { state: 'Running' },
      createdAt: new Date(CREATED_MS),
      expiresAt: null,
    });
    const pages = [
      {
        items: [info('r1', 'a'), info('r2', 'b')],
        pagination: { page: 1, totalPages: 2, hasNextPage: true },
      },
      {
        items: [
          info('r2', 'b'),
          info('r3', 'c'),
          { ...info('x', 'd'), metadata: { team: 'data' } },
        ],
        pagination: { page: 2, totalPages: 2, hasNextPage: false },
      },
    ];
    const asked: OpenSandboxListFilter[] = [];
    const provider = make({
      ...fake.sdk,
      SandboxManager: {
        create: () => ({
          listSandboxInfos: async (filter: OpenSandboxListFilter = {}) => {
            asked.push(filter);
            return pages[(filter.page ?? 1) - 1] ?? { items: [] };
          },
          close: async () => {},
        }),
      },
    });

    const listed = await provider.listSandboxes();

    expect(listed.map((s) => [s.id, s.threadId, s.location])).toEqual([
      ['r1', 'a', 'opensandbox'],
      ['r2', 'b', 'opensandbox'],
      ['r3', 'c', 'opensandbox'],
    ]);
    expect(asked).toEqual([
      { metadata: TAG, page: 1, pageSize: LIST_PAGE_SIZE },
      { metadata: TAG, page: 2, pageSize: LIST_PAGE_SIZE },
    ]);
  });

  it('reports a server that cannot list instead of an empty list, and still closes the transport', async () => {
    const { fake, provider } = setup();
    await provider.acquire({ userId: 'u1', threadId: 't1' });
    fake.failNext('list', new Error('lifecycle API unreachable'));
    await expect(provider.listSandboxes()).rejects.toThrow('lifecycle API unreachable');
    expect(fake.gate.count('closeManager')).toBe(1);
    expect(await provider.listSandboxes()).toHaveLength(1);
  });

  it('refuses clearly on an SDK without SandboxManager', async () => {
    const { fake, make } = setup();
    const { Sandbox: sandbox, ConnectionConfig: config } = fake.sdk;
    const provider = make({ Sandbox: sandbox, ConnectionConfig: config });
    const error = await rejectionOf(provider.listSandboxes());
    expect(error).toBeInstanceOf(SandboxRuntimeError);
    expect((error as Error).message).toContain('SandboxManager');
  });

  it('honours an aborted signal before asking the server', async () => {
    const { fake, provider } = setup();
    const controller = new AbortController();
    controller.abort();
    expect(await rejectionOf(provider.listSandboxes({ signal: controller.signal }))).toBeInstanceOf(
      AbortedError,
    );
    expect(fake.gate.count('list')).toBe(0);
  });

  it('honours a signal aborted while the server answers, and closes the transport', async () => {
    const { fake, provider } = setup();
    await provider.acquire({ userId: 'u1', threadId: 't1' });
    fake.gate.pause('list', { times: 1 });
    const controller = new AbortController();
    const listing = provider.listSandboxes({ signal: controller.signal });
    const held = await fake.gate.nextCall('list');
    controller.abort();
    await held.release();
    expect(await rejectionOf(listing)).toBeInstanceOf(AbortedError);
    expect(fake.gate.count('closeManager')).toBe(1);
  });

  it('is refused after shutdown', async () => {
    const { provider } = setup();
    await provider.shutdown();
    await expect(provider.listSandboxes()).rejects.toThrow(/shut down/);
  });
});

describe('OpenSandboxProvider.listSandboxes through the real SDK and the stand-in server', () => {
  const API_KEY = 'standin-key';
  let standin: OpenSandboxStandin;
  const opened: Sandbox[] = [];

  beforeAll(async () => {
    standin = await OpenSandboxStandin.start({ apiKey: API_KEY });
  });
  afterAll(async () => {
    await Promise.all(opened.map((s) => s.kill().then(() => s.close())));
    await standin.stop();
  });

  it('lists the tagged sandboxes of the server with the SDK SandboxManager, and only them', async () => {
    const opensandbox = { domain: standin.domain, api_key: API_KEY, disable_metrics: true };
    const make = () => {
      const p = new OpenSandboxProvider({
        config: { image: 'sbx-test:1', opensandbox },
        logger: { debug() {}, info() {}, warn() {}, error() {} },
        background: false,
      });
      providers.push(p);
      return p;
    };
    const provider = make();
    const id = await provider.acquire({ userId: 'u-real', threadId: 't-real' });
    const remote = provider.get(id)!.remoteId;
    const unrelated = await Sandbox.create({
      image: 'python:3.11',
      connectionConfig: new ConnectionConfig({
        domain: standin.domain,
        apiKey: API_KEY,
        disableMetrics: true,
      }),
      metadata: { team: 'data' },
      readyTimeoutSeconds: 5,
    });
    opened.push(unrelated);
    const deletesBefore = standin.requests.filter((r) => r.method === 'DELETE').length;

    const inspector = make();
    const listed = await inspector.listSandboxes();
    await inspector.shutdown();

    expect(listed).toEqual([
      {
        id: remote,
        userId: 'u-real',
        threadId: 't-real',
        state: 'Running',
        updatedAt: standin.sandboxes.get(remote)!.createdAt.toISOString(),
        location: 'opensandbox:sbx-test:1',
      },
    ]);
    const list = standin.requests.filter((r) => r.method === 'GET' && r.path === '/v1/sandboxes');
    expect(list.length).toBeGreaterThan(0);
    expect(list.every((r) => r.apiKey === API_KEY)).toBe(true);
    expect(standin.requests.filter((r) => r.method === 'DELETE')).toHaveLength(deletesBefore);
    expect(standin.sandboxes.has(remote)).toBe(true);
    expect((await provider.listSandboxes()).map((s) => s.state)).toEqual(['active']);
  });
});
