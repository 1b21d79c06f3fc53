import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathMapping } from '@sbx/core';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalSandbox } from './local-sandbox.js';

/**
 * Generated symbolic-link layouts below a workspace, and generated path arguments against each:
 * whatever the agent names, a read returns only content from inside the workspace (every file
 * outside says OUTSIDE), and a write lands only inside it.
 */
const LAYOUTS = 100;
const PATHS_PER_LAYOUT = 1_000;

let base: string;
let outside: string;

beforeAll(async () => {
  base = await mkdtemp(path.join(tmpdir(), 'sbx-confine-'));
  outside = path.join(base, 'outside');
  await mkdir(path.join(outside, 'sub'), { recursive: true });
  await writeFile(path.join(outside, 'f'), 'OUTSIDE\n');
  await writeFile(path.join(outside, 'sub', 'f'), 'OUTSIDE\n');
});

afterAll(async () => {
  await rm(base, { recursive: true, force: true });
});

/** Where a link may point: inside the workspace, outside it, relative climbs, nowhere, itself. */
const linkTarget = fc.constantFrom(
  'INSIDE:a',
  'INSIDE:a/f',
  'OUTSIDE:',
  'OUTSIDE:f',
  'OUTSIDE:sub',
  '../outside',
  '../../outside/f',
  '../',
  '/',
  '/etc',
  'missing',
  '../outside/missing-new',
  'SELF',
);
const linkName = fc.constantFrom('l1', 'l2', 'a/l3', 'b/l4', 'a/b');
const segment = fc.constantFrom(
  'a',
  'b',
  'f',
  'l1',
  'l2',
  'l3',
  'l4',
  'sub',
  'missing',
  '..',
  '.',
  '',
  '...',
  '%2e%2e',
  '..\\..',
  'a\\..\\..',
  '\u2025',
);

async function buildLayout(root: string, links: [string, string][]): Promise<void> {
  await mkdir(path.join(root, 'a'), { recursive: true });
  await mkdir(path.join(root, 'b'), { recursive: true });
  await writeFile(path.join(root, 'a', 'f'), 'inside\n');
  await writeFile(path.join(root, 'f'), 'inside\n');
  for (const [name, target] of links) {
    const at = path.join(root, name);
    let to = target;
    if (target.startsWith('INSIDE:')) to = path.join(root, target.slice(7));
    else if (target.startsWith('OUTSIDE:')) to = path.join(outside, target.slice(8));
    else if (target === 'SELF') to = at;
    await rm(at, { recursive: true, force: true });
    await symlink(to, at).catch(() => undefined);
  }
}

describe('confinement holds for generated paths and link layouts (property)', () => {
  it(`${LAYOUTS} layouts x ${PATHS_PER_LAYOUT} paths: 0 escapes`, async () => {
    let escapes = 0;
    let reads = 0;
    let layoutNo = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(linkName, linkTarget), { minLength: 1, maxLength: 6 }),
        async (links) => {
          const root = path.join(base, `ws${layoutNo++}`);
          await buildLayout(root, links);
          const sandbox = new LocalSandbox('local:p:t', {
            mappings: [pathMapping('/mnt/user-data/workspace', root)],
          });
          const paths = fc.sample(
            fc
              .array(segment, { minLength: 1, maxLength: 5 })
              .map((parts) => `/mnt/user-data/workspace/${parts.join('/')}`),
            PATHS_PER_LAYOUT,
          );
          // In batches, as concurrent tool calls would arrive (and to keep the suite quick).
          for (let i = 0; i < paths.length; i += 50) {
            await Promise.all(
              paths.slice(i, i + 50).map(async (p) => {
                try {
                  const text = await sandbox.readFile(p);
                  reads++;
                  if (text.includes('OUTSIDE')) escapes++;
                } catch {
                  // refused or missing: never an escape
                }
              }),
            );
          }
          // Writes through the same layout land inside, or fail.
          for (const p of paths.slice(0, 50)) {
            await sandbox.writeFile(`${p}/new.txt`, 'x').catch(() => undefined);
          }
          await rm(root, { recursive: true, force: true });
          return escapes === 0;
        },
      ),
      { numRuns: LAYOUTS },
    );
    expect(escapes).toBe(0);
    // The generator reached real files, not only refusals.
    expect(reads).toBeGreaterThan(0);
    const { readdir } = await import('node:fs/promises');
    expect((await readdir(outside)).sort()).toEqual(['f', 'sub']);
    expect(await readdir(path.join(outside, 'sub'))).toEqual(['f']);
  }, 180_000);
});
