import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LINE_LIMIT, sourceSizes } from './source-size.mjs';

let root: string | undefined;
afterEach(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

describe('source-size', () => {
  it('counts non-test source lines per file, largest first, tests and declarations left out', async () => {
    root = await mkdtemp(path.join(tmpdir(), 'sbx-size-'));
    await mkdir(path.join(root, 'packages/a/src/deep'), { recursive: true });
    await writeFile(path.join(root, 'packages/a/src/big.ts'), 'x\n'.repeat(LINE_LIMIT + 1));
    await writeFile(path.join(root, 'packages/a/src/deep/small.mjs'), 'a\nb\n');
    await writeFile(path.join(root, 'packages/a/src/big.test.ts'), 'x\n'.repeat(900));
    await writeFile(path.join(root, 'packages/a/src/types.d.ts'), 'x\n'.repeat(900));
    await writeFile(path.join(root, 'packages/a/src/notes.md'), 'x\n'.repeat(900));
    expect(await sourceSizes(root)).toEqual([
      { file: 'packages/a/src/big.ts', lines: LINE_LIMIT + 1 },
      { file: 'packages/a/src/deep/small.mjs', lines: 2 },
    ]);
  });
});
