import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import {
  docFiles,
  extractSnippets,
  namesModel,
  snippetsOf,
  typecheckSnippets,
  type DocSnippet,
} from './doc-snippets.js';
import { runExampleCode } from './readme-example.js';

const ROOT = path.join(import.meta.dirname, '..', '..');

/** Blocks of the docs' own test runs: the package test of a README whose example names a model. */
const MODEL_EXAMPLE_TESTS: Readonly<Record<string, string>> = {
  'packages/ai-sdk/README.md': 'packages/ai-sdk/src/create-sbx-tools.test.ts',
  'packages/langchain/README.md': 'packages/langchain/src/create-sbx-tools.test.ts',
  'packages/openai-agents/README.md': 'packages/openai-agents/src/create-sbx-tools.test.ts',
};

/**
 * A block that must fail the check, checked in the same program as the docs: proof that the
 * checker sees a name a package does not export and a call that does not fit, in a form the docs
 * use (a `check` block with given names around it).
 */
const CANARY: DocSnippet = {
  file: path.join(ROOT, 'README.md'),
  line: 1,
  kind: 'check',
  code: [
    "import { createSandbox, sandboxOfNoPackage } from '@sbx/core';",
    'await createSandbox({ provider, threadId: 42 });',
  ].join('\n'),
};

/** A runnable example must be complete: a name it does not declare fails it. */
const RUN_CANARY: DocSnippet = {
  file: path.join(ROOT, 'README.md'),
  line: 1,
  kind: 'run',
  code: 'console.log(sandboxNobodyDeclared);',
};

const relative = (snippet: DocSnippet) => path.relative(ROOT, snippet.file);

describe('every TypeScript block of the docs', () => {
  let snippets: DocSnippet[];
  beforeAll(async () => {
    snippets = await snippetsOf(await docFiles(ROOT));
  });

  it('type-checks against the packages, in one program (fragments say why they are not)', () => {
    expect(snippets.length).toBeGreaterThan(40);
    const failures = typecheckSnippets(ROOT, [...snippets, CANARY, RUN_CANARY]);
    const codesOf = (canary: DocSnippet) =>
      failures.filter((f) => f.snippet === canary).map((f) => f.code);
    expect(codesOf(CANARY)).toEqual(expect.arrayContaining([2305, 2322]));
    expect(codesOf(RUN_CANARY)).toEqual([2304]);
    const docs = failures.filter((f) => f.snippet !== CANARY && f.snippet !== RUN_CANARY);
    expect(docs.map((f) => f.text)).toEqual([]);
    for (const fragment of snippets.filter((s) => s.kind === 'fragment')) {
      expect(fragment.reason, `${relative(fragment)}:${fragment.line}`).toMatch(/\w{3,}/);
    }
  }, 300_000);

  it('runs every runnable example that needs no model, each on a fresh data directory', async () => {
    const runnable = snippets.filter((s) => s.kind === 'run' && !namesModel(s));
    expect(runnable.map((s) => relative(s))).toEqual(
      expect.arrayContaining(['README.md', 'docs/processes.md']),
    );
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    try {
      for (const snippet of runnable) await runExampleCode(snippet.file, snippet.code);
    } finally {
      log.mockRestore();
    }
  }, 300_000);

  it('runs them all one after another on one data directory (no two share a thread)', async () => {
    const home = await mkdtemp(path.join(tmpdir(), 'sbx-doc-snippets-'));
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    try {
      for (const snippet of snippets.filter((s) => s.kind === 'run' && !namesModel(s))) {
        await runExampleCode(snippet.file, snippet.code, { home });
      }
    } finally {
      log.mockRestore();
      await rm(home, { recursive: true, force: true });
    }
  }, 300_000);

  it("leaves the examples that name a model to their package's test, which runs them", async () => {
    for (const snippet of snippets.filter((s) => s.kind === 'run' && namesModel(s))) {
      const test = MODEL_EXAMPLE_TESTS[relative(snippet)];
      expect(test, `${relative(snippet)}: which test runs this example?`).toBeDefined();
      expect(await readFile(path.join(ROOT, test!), 'utf8')).toContain('runReadmeExample(');
    }
  });
});

describe('the markers', () => {
  const file = path.join(ROOT, 'docs', 'example.md');
  const fence = (marker: string) => [marker, '', '```ts', 'const x = 1;', '```', ''].join('\n');

  it('reads run, fragment and check blocks, with the line of their code', () => {
    const text = [
      fence('<!-- example: runs in CI -->'),
      fence('<!-- example (deepagents): runs in CI -->'),
      fence('<!-- snippet: fragment - pseudo-code of a shape -->'),
      fence('Prose before a block.'),
      '```typescript',
      'let y = 2;',
      '```',
    ].join('\n');
    expect(
      extractSnippets(file, text).map(({ kind, line, reason }) => ({ kind, line, reason })),
    ).toEqual([
      { kind: 'run', line: 4, reason: undefined },
      { kind: 'run', line: 10, reason: undefined },
      { kind: 'fragment', line: 16, reason: 'pseudo-code of a shape' },
      { kind: 'check', line: 22, reason: undefined },
      { kind: 'check', line: 26, reason: undefined },
    ]);
  });

  it('refuses a fragment without its reason, a marker it does not know and an open block', () => {
    expect(() => extractSnippets(file, fence('<!-- snippet: fragment -->'))).toThrow(
      /needs its reason/,
    );
    expect(() => extractSnippets(file, fence('<!-- snippet: skip -->'))).toThrow(
      /unknown snippet marker/,
    );
    expect(() => extractSnippets(file, '```ts\nconst x = 1;\n')).toThrow(/never closed/);
  });
});
