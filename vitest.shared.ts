import { fileURLToPath } from 'node:url';
import type { UserWorkspaceConfig } from 'vitest/config';

const root = fileURLToPath(new URL('.', import.meta.url));

/**
 * Tests run against the TypeScript sources of sibling packages (no build needed), resolved through
 * the `@sbx/source` export condition that every package declares first in its `exports` map.
 */
export function sbxProject(name: string): UserWorkspaceConfig {
  return {
    resolve: { conditions: ['@sbx/source'] },
    ssr: { resolve: { conditions: ['@sbx/source'] } },
    test: {
      name,
      root: `${root}packages/${name}`,
      include: ['src/**/*.test.ts'],
      // Generous: many tests spawn processes, start servers or child runtimes, and must pass on a
      // loaded 2-core machine; a hang still fails, only later.
      testTimeout: 120_000,
      hookTimeout: 120_000,
    },
  };
}
