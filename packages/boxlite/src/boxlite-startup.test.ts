import { rejectionOf } from '@sbx/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import type { BoxliteRuntime } from './boxlite-runtime.js';
import { BoxliteStartup } from './boxlite-startup.js';
import { FakeBoxliteRuntime } from './testing/fake-boxlite-runtime.js';

const runtimes: FakeBoxliteRuntime[] = [];
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((r) => r.dispose()));
});

/** A startup whose first `failures` opens reject; counts opens and reconciliations. */
function startup(failures: number): {
  startup: BoxliteStartup;
  opens: () => number;
  reconciled: BoxliteRuntime[];
} {
  let opens = 0;
  const reconciled: BoxliteRuntime[] = [];
  const runtime = new FakeBoxliteRuntime();
  runtimes.push(runtime);
  const opened = new BoxliteStartup(
    async () => {
      opens += 1;
      if (opens <= failures) throw new Error('the BoxLite SDK is not installed');
      return runtime;
    },
    async (r) => {
      reconciled.push(r);
    },
  );
  return { startup: opened, opens: () => opens, reconciled };
}

describe('BoxliteStartup', () => {
  it('opens the runtime once for every caller and reconciles once, only for reconciled()', async () => {
    const h = startup(0);
    const [a, b] = await Promise.all([h.startup.runtime(), h.startup.runtime()]);
    expect(a).toBe(b);
    expect(h.reconciled).toEqual([]);
    expect(h.startup.reconciling).toBeUndefined();
    await Promise.all([h.startup.reconciled(), h.startup.reconciled()]);
    expect(h.reconciled).toEqual([a]);
    expect(h.opens()).toBe(1);
    expect(await h.startup.opened).toBe(a);
  });

  it('a failed open is forgotten: the next runtime() opens again', async () => {
    const h = startup(1);
    await rejectionOf(h.startup.runtime());
    expect(h.startup.opened).toBeUndefined();
    await h.startup.runtime();
    expect(h.opens()).toBe(2);
  });

  it('a reconciliation whose open failed is forgotten: the next reconciled() opens and reconciles', async () => {
    const h = startup(1);
    await rejectionOf(h.startup.reconciled());
    expect(h.startup.reconciling).toBeUndefined();
    const runtime = await h.startup.reconciled();
    expect(h.reconciled).toEqual([runtime]);
    expect(h.opens()).toBe(2);
  });
});
