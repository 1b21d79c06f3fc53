import { defineConfig } from 'tsup';

export default defineConfig([
  {
    entry: { index: 'src/index.ts' },
    format: ['esm', 'cjs'],
    dts: true,
    clean: true,
    sourcemap: true,
    target: 'node20',
    tsconfig: 'tsconfig.build.json',
    // `import.meta.url` (where the CLI is installed) must also work in the CommonJS build.
    shims: true,
  },
  {
    // The `sbx` executable: ESM only, with a shebang so the bin link runs it directly.
    entry: { bin: 'src/bin.ts' },
    format: ['esm'],
    dts: false,
    clean: false,
    sourcemap: true,
    target: 'node20',
    tsconfig: 'tsconfig.build.json',
    banner: { js: '#!/usr/bin/env node' },
  },
]);
