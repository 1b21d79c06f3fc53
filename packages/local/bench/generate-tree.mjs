// Generates the benchmark tree once (reused across runs): 20,000 files, about 200 MB, of which
// node_modules/ and .git/ (names every sbx search ignores) hold about two thirds.
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

export const NEEDLE = 'sbx_bench_needle';
const LAYOUT = {
  src: { dirs: 200, filesPerDir: 60, bytes: 5_000, ext: 'ts' },
  node_modules: { dirs: 100, filesPerDir: 60, bytes: 17_000, ext: 'js' },
  '.git': { dirs: 100, filesPerDir: 20, bytes: 20_000, ext: 'pack' },
};
const VERSION = 'v1';

function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS =
  'const let function return import export async await value result error path file line data node tree walk search match index buffer stream promise'.split(
    ' ',
  );

function fileText(rand, bytes, withNeedle) {
  const lines = [];
  let size = 0;
  while (size < bytes) {
    const n = 4 + Math.floor(rand() * 10);
    const words = [];
    for (let i = 0; i < n; i++) words.push(WORDS[Math.floor(rand() * WORDS.length)]);
    const line = `${'  '.repeat(Math.floor(rand() * 4))}${words.join(' ')};`;
    lines.push(line);
    size += line.length + 1;
  }
  if (withNeedle) lines.splice(Math.floor(lines.length / 2), 0, `// ${NEEDLE} marker`);
  return `${lines.join('\n')}\n`;
}

/** Creates the tree under `root` unless a complete one of this version is already there. */
export async function ensureTree(root, log = () => {}) {
  const marker = path.join(root, '.bench-complete');
  try {
    if ((await readFile(marker, 'utf8')) === VERSION) return summary();
  } catch {
    // not generated yet
  }
  log(`generating benchmark tree in ${root} (once)...`);
  await rm(root, { recursive: true, force: true });
  const rand = rng(42);
  const jobs = [];
  for (const [top, spec] of Object.entries(LAYOUT)) {
    for (let d = 0; d < spec.dirs; d++) {
      const dir =
        top === 'src'
          ? path.join(root, 'src', `pkg${String(d).padStart(3, '0')}`)
          : top === 'node_modules'
            ? path.join(root, 'node_modules', `dep${String(d).padStart(3, '0')}`, 'lib')
            : path.join(root, '.git', 'objects', d.toString(16).padStart(2, '0'));
      jobs.push({ dir, spec, top, d });
    }
  }
  for (const { dir, spec, top, d } of jobs) {
    await mkdir(dir, { recursive: true });
    const writes = [];
    for (let f = 0; f < spec.filesPerDir; f++) {
      // 25 needles in src, 25 in node_modules (which sbx skips), none in .git.
      const needle = top !== '.git' && f === 7 && d % (top === 'src' ? 8 : 4) === 0;
      const name = `file${String(f).padStart(2, '0')}.${spec.ext}`;
      writes.push(writeFile(path.join(dir, name), fileText(rand, spec.bytes, needle)));
    }
    await Promise.all(writes);
  }
  await writeFile(marker, VERSION);
  return summary();
}

export function summary() {
  let files = 0;
  let bytes = 0;
  for (const spec of Object.values(LAYOUT)) {
    files += spec.dirs * spec.filesPerDir;
    bytes += spec.dirs * spec.filesPerDir * spec.bytes;
  }
  return { files, approxBytes: bytes };
}
