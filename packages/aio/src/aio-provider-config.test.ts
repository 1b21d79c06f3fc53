import { parseSandboxConfig } from '@sbx/core';
import { describe, expect, it } from 'vitest';
import { resolveAioSettings, validateConfigBlock } from './aio-provider-config.js';

const config = (aio: Record<string, unknown>) =>
  parseSandboxConfig({ use: '@sbx/aio', aio }, { env: {} });

describe('sandbox.aio reconciliation keys', () => {
  it('takes the names @sbx/e2b uses, and the earlier reconcile_* names as aliases', () => {
    const canonical = resolveAioSettings(
      config({
        reconciliation_interval_seconds: 7,
        reconciliation_max_items: 9,
        reconciliation_max_seconds: 4,
      }),
      {},
    );
    const aliased = resolveAioSettings(
      config({ reconcile_interval_seconds: 7, reconcile_max_items: 9, reconcile_max_seconds: 4 }),
      {},
    );
    expect(canonical.reconcile).toEqual({ intervalSeconds: 7, maxItems: 9, maxSeconds: 4 });
    expect(aliased.reconcile).toEqual(canonical.reconcile);
  });

  it('refuses an alias and its name set to different values, and checks both like any key', () => {
    expect(
      validateConfigBlock(
        config({ reconcile_interval_seconds: 5, reconciliation_interval_seconds: 6 }),
      ),
    ).toEqual([
      {
        path: 'sandbox.aio.reconcile_interval_seconds',
        message:
          'is another name for reconciliation_interval_seconds, which is set to a different value; keep one',
      },
    ]);
    expect(
      validateConfigBlock(
        config({ reconcile_interval_seconds: 5, reconciliation_interval_seconds: 5 }),
      ),
    ).toEqual([]);
    expect(
      validateConfigBlock(config({ reconciliation_max_items: -1 })).map((i) => i.path),
    ).toEqual(['sandbox.aio.reconciliation_max_items']);
  });
});
