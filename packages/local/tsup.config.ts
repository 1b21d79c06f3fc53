import { defineConfig } from 'tsup';

export default defineConfig([
  {
    entry: { index: 'src/index.ts' },
    format: ['esm', 'cjs'],
    // `import.meta.url` in the CommonJS build (lru-cache is required relative to this package).
    shims: true,
    dts: true,
    clean: true,
    sourcemap: true,
    target: 'node20',
    tsconfig: 'tsconfig.build.json',
  },
  {
    // The runnable demo: ESM only, with a shebang so the `sbx-local-demo` bin executes directly.
    entry: { demo: 'src/demo.ts' },
    format: ['esm'],
    dts: false,
    clean: false,
    sourcemap: true,
    target: 'node20',
    tsconfig: 'tsconfig.build.json',
    banner: { js: '#!/usr/bin/env node' },
  },
]);
