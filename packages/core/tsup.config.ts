import { copyFile } from 'node:fs/promises';
import { defineConfig } from 'tsup';

export default defineConfig({
  entry: {
    index: 'src/index.ts',
    testing: 'src/testing.ts',
    internal: 'src/internal.ts',
    'provider-kit': 'src/provider-kit.ts',
  },
  format: ['esm', 'cjs'],
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'node20',
  tsconfig: 'tsconfig.build.json',
  // `import.meta.url` in the CommonJS build, where the search worker is located from.
  shims: true,
  // The search worker is plain CommonJS loaded by path (`new Worker(url)`): shipped beside the
  // bundles that locate it relative to themselves.
  async onSuccess() {
    await copyFile('src/search/search-worker.cjs', 'dist/search-worker.cjs');
  },
});
