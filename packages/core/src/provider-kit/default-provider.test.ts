import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { SandboxConfig } from '../config/config.js';
import { parseSandboxConfig } from '../config/config-loader.js';
import {
  getInstalledSandboxProvider,
  getSandboxProvider,
  onProviderDetached,
  resetSandboxProvider,
  setSandboxProvider,
  shutdownSandboxProvider,
} from './default-provider.js';
import type { ProviderDetachReason } from './default-provider.js';
import type { Logger } from '../logging/logger.js';
import type { ModuleImporter, SandboxProviderInit } from './provider-loader.js';
import type { Sandbox } from '../contract/sandbox.js';
import { SandboxProvider } from '../contract/sandbox-provider.js';

interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(err: unknown): void;
}
function deferred<T = void>(): Deferred<T> {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Lets every already-settled continuation run, so "nothing else happened" can be asserted. */
const settle = async () => {
  for (let i = 0; i < 20; i++) await Promise.resolve();
};

let serial = 0;
class CountingProvider extends SandboxProvider {
  readonly n = ++serial;
  shutdowns = 0;
  resets = 0;
  constructor(readonly init?: SandboxProviderInit) {
    super();
  }
  async acquire(): Promise<string> {
    return `id-${this.n}`;
  }
  get(): Sandbox | undefined {
    return undefined;
  }
  async release(): Promise<void> {}
  override async reset(): Promise<void> {
    this.resets++;
  }
  override async shutdown(): Promise<void> {
    this.shutdowns++;
  }
}

/**
 * A provider package whose factory blocks each construction on its own gate, so a test decides
 * exactly in which order concurrent cold starts finish.
 */
function gatedPackage() {
  const gates: Array<Deferred<void>> = [];
  const built: CountingProvider[] = [];
  const entered: Array<Deferred<void>> = Array.from({ length: 50 }, () => deferred());
  let calls = 0;
  const importer: ModuleImporter = async () => ({
    createProvider: async (init: SandboxProviderInit) => {
      const i = calls++;
      const gate = (gates[i] ??= deferred());
      entered[i]!.resolve();
      await gate.promise;
      const p = new CountingProvider(init);
      built[i] = p;
      return p;
    },
  });
  const gate = (i: number) => (gates[i] ??= deferred());
  return { importer, gate, built, entered: (i: number) => entered[i]!.promise };
}

const config = (use = 'fake-provider'): SandboxConfig =>
  parseSandboxConfig({ use }, { env: {}, cwd: '/' });

function recordingLogger(): Logger & {
  errors: Array<[string, Record<string, unknown> | undefined]>;
} {
  const errors: Array<[string, Record<string, unknown> | undefined]> = [];
  const noop = () => {};
  return { debug: noop, info: noop, warn: noop, error: (m, f) => errors.push([m, f]), errors };
}

afterEach(async () => {
  await resetSandboxProvider();
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
});

describe('getSandboxProvider', () => {
  it('§10.8.99 10 concurrent cold starts: one winner for all, 9 losers shut down once each, winner never', async () => {
    const pkg = gatedPackage();
    const calls = Array.from({ length: 10 }, () =>
      getSandboxProvider({ config: config(), importer: pkg.importer }),
    );
    for (let i = 0; i < 10; i++) await pkg.entered(i); // every caller is building its own instance

    pkg.gate(3).resolve(); // caller 3 finishes first
    const winner = await calls[3];
    expect(getInstalledSandboxProvider()).toBe(winner);

    for (const i of [9, 0, 5, 1, 8, 2, 7, 4, 6]) pkg.gate(i).resolve();
    const results = await Promise.all(calls);

    expect(new Set(results)).toEqual(new Set([winner]));
    expect(winner).toBe(pkg.built[3]);
    expect(pkg.built).toHaveLength(10);
    for (const [i, p] of pkg.built.entries()) {
      expect(p.shutdowns, `instance ${i}`).toBe(i === 3 ? 0 : 1);
      expect(p.resets).toBe(0);
    }
  });

  it('a warm call returns the installed provider without loading config or importing', async () => {
    const p = new CountingProvider();
    await setSandboxProvider(p);
    const importer = vi.fn<ModuleImporter>();
    const configFn = vi.fn(() => config());
    expect(await getSandboxProvider({ importer, config: configFn })).toBe(p);
    expect(importer).not.toHaveBeenCalled();
    expect(configFn).not.toHaveBeenCalled();
  });

  it('passes the config and logger to the provider', async () => {
    const pkg = gatedPackage();
    pkg.gate(0).resolve();
    const logger = recordingLogger();
    const c = config();
    const p = (await getSandboxProvider({
      config: async () => c,
      importer: pkg.importer,
      logger,
    })) as CountingProvider;
    expect(p.init?.config).toBe(c);
    expect(p.init?.logger).toBe(logger);
  });

  it('a failed cold start fails only its caller; a concurrent one still installs', async () => {
    const pkg = gatedPackage();
    const a = getSandboxProvider({ config: config(), importer: pkg.importer });
    const b = getSandboxProvider({ config: config(), importer: pkg.importer });
    await pkg.entered(1);
    pkg.gate(0).reject(new Error('constructor failed'));
    await expect(a).rejects.toThrow('constructor failed');
    expect(getInstalledSandboxProvider()).toBeUndefined();
    pkg.gate(1).resolve();
    expect(await b).toBe(pkg.built[1]);
    expect(getInstalledSandboxProvider()).toBe(pkg.built[1]);
  });

  it('a loser whose shutdown fails is reported, and its caller still gets the winner', async () => {
    const pkg = gatedPackage();
    const logger = recordingLogger();
    const a = getSandboxProvider({ config: config(), importer: pkg.importer });
    const b = getSandboxProvider({ config: config(), importer: pkg.importer, logger });
    await pkg.entered(1);
    pkg.gate(0).resolve();
    const winner = await a;
    const loserShutdown = vi.fn(async () => {
      throw new Error('stuck');
    });
    vi.spyOn(CountingProvider.prototype, 'shutdown').mockImplementation(loserShutdown);
    pkg.gate(1).resolve();
    expect(await b).toBe(winner);
    expect(loserShutdown).toHaveBeenCalledTimes(1);
    expect(logger.errors).toEqual([
      ['shutting down a discarded sandbox provider failed', { error: 'stuck' }],
    ]);
  });

  it('without a logger a failed loser shutdown becomes a process warning', async () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const pkg = gatedPackage();
    const a = getSandboxProvider({ config: config(), importer: pkg.importer });
    const b = getSandboxProvider({ config: config(), importer: pkg.importer });
    await pkg.entered(1);
    pkg.gate(0).resolve();
    await a;
    vi.spyOn(CountingProvider.prototype, 'shutdown').mockRejectedValue(new Error('stuck'));
    pkg.gate(1).resolve();
    await b;
    expect(warn).toHaveBeenCalledWith('shutting down a discarded sandbox provider failed: stuck', {
      code: 'SBX_DEFAULT_PROVIDER',
    });
  });

  it('without a config option builds from built-in defaults (@sbx/local)', async () => {
    vi.stubEnv('SBX_CONFIG_PATH', '');
    const seen: string[] = [];
    const importer: ModuleImporter = async (s) => {
      seen.push(s);
      return { default: CountingProvider };
    };
    const p = (await getSandboxProvider({ importer })) as CountingProvider;
    expect(seen).toEqual(['@sbx/local']);
    expect(p.init?.config.use).toBe('@sbx/local');
  });

  it('without a config option reads the file named by SBX_CONFIG_PATH', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'sbx-default-provider-'));
    try {
      const file = path.join(dir, 'config.yaml');
      await writeFile(file, 'sandbox:\n  use: "@acme/provider#Make"\n  replicas: 4\n');
      vi.stubEnv('SBX_CONFIG_PATH', file);
      const importer: ModuleImporter = async () => ({ Make: CountingProvider });
      const p = (await getSandboxProvider({ importer })) as CountingProvider;
      expect(p.init?.config.replicas).toBe(4);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('resetSandboxProvider / shutdownSandboxProvider / setSandboxProvider', () => {
  it('§10.8.94 reset detaches, calls reset() once, and the next get builds a new instance with new config', async () => {
    const importer: ModuleImporter = async () => ({ default: CountingProvider });
    const first = (await getSandboxProvider({
      config: config('a-provider'),
      importer,
    })) as CountingProvider;
    await resetSandboxProvider();
    expect(first.resets).toBe(1);
    expect(first.shutdowns).toBe(0);
    expect(getInstalledSandboxProvider()).toBeUndefined();
    const second = (await getSandboxProvider({
      config: config('b-provider'),
      importer,
    })) as CountingProvider;
    expect(second).not.toBe(first);
    expect(second.init?.config.use).toBe('b-provider');
    await resetSandboxProvider();
    await resetSandboxProvider(); // nothing installed: a no-op
    expect(second.resets).toBe(1);
  });

  it('§10.8.94 shutdown detaches and calls shutdown() once; the next get builds anew', async () => {
    const p = new CountingProvider();
    await setSandboxProvider(p);
    await shutdownSandboxProvider();
    await shutdownSandboxProvider();
    expect(p.shutdowns).toBe(1);
    expect(p.resets).toBe(0);
    expect(getInstalledSandboxProvider()).toBeUndefined();
  });

  it('errors of reset() and shutdown() propagate after the provider is detached', async () => {
    const p = new CountingProvider();
    p.reset = async () => {
      throw new Error('reset failed');
    };
    await setSandboxProvider(p);
    await expect(resetSandboxProvider()).rejects.toThrow('reset failed');
    expect(getInstalledSandboxProvider()).toBeUndefined();
  });

  it('set does not shut down or reset the replaced instance', async () => {
    const a = new CountingProvider();
    const b = new CountingProvider();
    await setSandboxProvider(a);
    await setSandboxProvider(b);
    expect(getInstalledSandboxProvider()).toBe(b);
    expect([a.shutdowns, a.resets]).toEqual([0, 0]);
  });

  it('§10.8.100 get racing set: the late builder discards its own instance and returns the set one', async () => {
    const pkg = gatedPackage();
    const pending = getSandboxProvider({ config: config(), importer: pkg.importer });
    await pkg.entered(0);
    const installed = new CountingProvider();
    await setSandboxProvider(installed);
    pkg.gate(0).resolve();
    expect(await pending).toBe(installed);
    expect(pkg.built[0]!.shutdowns).toBe(1);
    expect(installed.shutdowns).toBe(0);
  });

  it('§10.8.100 get racing reset and shutdown: always a fully built provider, never undefined', async () => {
    const pkg = gatedPackage();
    const pending = getSandboxProvider({ config: config(), importer: pkg.importer });
    await pkg.entered(0);
    const old = new CountingProvider();
    await setSandboxProvider(old);
    await resetSandboxProvider();
    await setSandboxProvider(new CountingProvider());
    await shutdownSandboxProvider();
    pkg.gate(0).resolve();
    const p = await pending;
    expect(p).toBe(pkg.built[0]);
    expect(p).toBeInstanceOf(CountingProvider);
    expect(getInstalledSandboxProvider()).toBe(p);
    expect(old.resets).toBe(1);
  });
});

describe('onProviderDetached', () => {
  it('tells listeners about reset, shutdown and replacement, with the detached provider', async () => {
    const events: Array<[number, ProviderDetachReason]> = [];
    const off = onProviderDetached((p, reason) => {
      events.push([(p as CountingProvider).n, reason]);
    });
    const a = new CountingProvider();
    const b = new CountingProvider();
    const c = new CountingProvider();
    await setSandboxProvider(a);
    await setSandboxProvider(a); // same instance: nothing detached
    await setSandboxProvider(b);
    await resetSandboxProvider();
    await setSandboxProvider(c);
    await shutdownSandboxProvider();
    off();
    await setSandboxProvider(a);
    await resetSandboxProvider();
    expect(events).toEqual([
      [a.n, 'replaced'],
      [b.n, 'reset'],
      [c.n, 'shutdown'],
    ]);
  });

  it('never fires for a cold-start loser (it was never the default)', async () => {
    const detached: SandboxProvider[] = [];
    const off = onProviderDetached((p) => {
      detached.push(p);
    });
    const pkg = gatedPackage();
    const a = getSandboxProvider({ config: config(), importer: pkg.importer });
    const b = getSandboxProvider({ config: config(), importer: pkg.importer });
    await pkg.entered(1);
    pkg.gate(0).resolve();
    pkg.gate(1).resolve();
    await Promise.all([a, b]);
    off();
    expect(detached).toEqual([]);
  });

  it('listeners run (and are awaited) before the provider is reset', async () => {
    const order: string[] = [];
    const release = deferred();
    const off = onProviderDetached(async () => {
      order.push('listener start');
      await release.promise;
      order.push('listener end');
    });
    const p = new CountingProvider();
    p.reset = async () => {
      order.push('reset');
    };
    await setSandboxProvider(p);
    const resetting = resetSandboxProvider();
    await settle();
    expect(order).toEqual(['listener start']);
    expect(getInstalledSandboxProvider()).toBeUndefined(); // detached before any listener runs
    release.resolve();
    await resetting;
    off();
    expect(order).toEqual(['listener start', 'listener end', 'reset']);
  });

  it('a failing listener is reported and neither stops the others nor the reset', async () => {
    const logger = recordingLogger();
    const seen: string[] = [];
    const off1 = onProviderDetached(() => {
      throw new Error('listener broke');
    });
    const off2 = onProviderDetached(() => {
      seen.push('second');
    });
    const p = new CountingProvider();
    await setSandboxProvider(p);
    await resetSandboxProvider({ logger });
    off1();
    off2();
    expect(seen).toEqual(['second']);
    expect(p.resets).toBe(1);
    expect(logger.errors).toEqual([
      ['sandbox provider detach listener failed (reset)', { error: 'listener broke' }],
    ]);
  });

  it('the same function subscribed twice is called twice and unsubscribed independently', async () => {
    let calls = 0;
    const listener = () => {
      calls++;
    };
    const off1 = onProviderDetached(listener);
    const off2 = onProviderDetached(listener);
    await setSandboxProvider(new CountingProvider());
    await resetSandboxProvider();
    off1();
    await setSandboxProvider(new CountingProvider());
    await resetSandboxProvider();
    off2();
    expect(calls).toBe(3);
  });
});
