import { afterAll, beforeAll, describe } from 'vitest';
import { isSbxError } from '../errors/errors.js';
import type { SandboxProvider } from '../contract/sandbox-provider.js';

// What every provider contract suite stands on: one provider made per suite and shut down after
// it (a failed test included, so its sandboxes never outlive the run), thread ids that never
// repeat across suites and processes (so providers need no reset between tests), and the code of
// a typed refusal.

export interface ProviderUnderTest {
  provider: SandboxProvider;
  cleanup?: () => Promise<void>;
}

/**
 * `describe(title)` around `body`, with `make` called once before its tests; `provider()` is the
 * provider made (call it inside a test, not while the suite is being collected).
 */
export function describeProviderSuite(
  title: string,
  make: () => Promise<ProviderUnderTest>,
  body: (provider: () => SandboxProvider) => void,
): void {
  describe(title, () => {
    let put: ProviderUnderTest | undefined;
    beforeAll(async () => {
      put = await make();
    });
    afterAll(async () => {
      await put?.provider.shutdown();
      await put?.cleanup?.();
    });
    body(() => {
      if (!put) throw new Error(`${title}: the provider is used before the suite made it`);
      return put.provider;
    });
  });
}

/** Thread ids `<prefix>-<label>-<pid>-<n>`, unique per call. */
export function threadIds(prefix: string): (label: string) => string {
  let unique = 0;
  return (label) => `${prefix}-${label}-${process.pid}-${++unique}`;
}

/** The `SbxError` code of a refusal; undefined for anything else. */
export function errorCode(error: unknown): string | undefined {
  return isSbxError(error) ? error.code : undefined;
}
