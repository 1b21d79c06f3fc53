#!/usr/bin/env node
// Source files over the size limit, and the size of @sbx/core's public surface.
//
//   node tools/scripts/source-size.mjs            prints both; exit 0
//   node tools/scripts/source-size.mjs --check    exit 1 when a non-test source file is over the limit
//
// Counted: every .ts/.mts/.cts/.mjs/.cjs file under packages/*/src that is not a test
// (*.test.*) or test support of a package's own tests. The export count is the runtime names of
// the built @sbx/core entry (types are free): run after `npm run build`.
import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const LINE_LIMIT = 500;
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SOURCE = /\.(ts|mts|cts|mjs|cjs)$/;
const TEST = /\.test\.|\.int\.test\.|\.d\.ts$/;

async function* walk(dir) {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* walk(full);
    else yield full;
  }
}

/** Non-test source files of every package with their line counts, largest first. */
export async function sourceSizes(root = ROOT) {
  const out = [];
  for (const pkg of await readdir(path.join(root, 'packages'))) {
    const src = path.join(root, 'packages', pkg, 'src');
    try {
      for await (const file of walk(src)) {
        if (!SOURCE.test(file) || TEST.test(file)) continue;
        const text = await readFile(file, 'utf8');
        out.push({
          file: path.relative(root, file),
          lines: text.split('\n').length - (text.endsWith('\n') ? 1 : 0),
        });
      }
    } catch (err) {
      if (err.code !== 'ENOENT') throw err;
    }
  }
  return out.sort((a, b) => b.lines - a.lines);
}

/** Runtime names exported by the built @sbx/core entry, or undefined before a build. */
export async function coreExportCount(root = ROOT) {
  try {
    const mod = await import(pathToFileURL(path.join(root, 'packages/core/dist/index.js')).href);
    return Object.keys(mod).length;
  } catch {
    return undefined;
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const sizes = await sourceSizes();
  const over = sizes.filter((s) => s.lines > LINE_LIMIT);
  console.log(`source files over ${LINE_LIMIT} lines: ${over.length}`);
  for (const s of over) console.log(`  ${String(s.lines).padStart(5)}  ${s.file}`);
  const count = await coreExportCount();
  console.log(`@sbx/core runtime exports: ${count ?? 'unknown (build first)'}`);
  if (process.argv.includes('--check') && over.length > 0) process.exitCode = 1;
}
