import type * as ZodModule from 'zod';
import { lazyModule } from '../modules/lazy-module.js';

export { lazily } from '../modules/lazy-module.js';

const zodModule = lazyModule<typeof ZodModule>('zod');

/** The `z` namespace of zod, as the schema builders take it. */
export type Zod = typeof ZodModule.z;

/**
 * zod, loaded on first use rather than with `@sbx/core`: it is most of the package's import cost
 * (about 100 ms on a cold start), and a host that never parses a config file or a tool call (a
 * provider used directly, `sbx --help`) should not pay for it. Every schema of core is built
 * behind this, once, on the first parse.
 */
export function zod(): Zod {
  return zodModule().z;
}
