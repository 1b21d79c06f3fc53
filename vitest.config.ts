import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    projects: [
      'packages/*/vitest.config.ts',
      {
        // Repository tooling (the packaging check's rules); not part of any published package.
        // Sources of the packages, as in every package project (README examples import them).
        resolve: { conditions: ['@sbx/source'] },
        ssr: { resolve: { conditions: ['@sbx/source'] } },
        test: {
          name: 'tools',
          root: './tools',
          include: ['**/*.test.ts'],
          // Hooks start registries and pack tarballs: a minute or more on a busy 2-core machine.
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
