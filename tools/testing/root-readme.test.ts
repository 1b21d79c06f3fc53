import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { runReadmeExample } from './readme-example.js';

const README = path.join(import.meta.dirname, '..', '..', 'README.md');

describe("the root README's 'Using it' example", () => {
  let home: string;
  beforeEach(async () => {
    home = await mkdtemp(path.join(tmpdir(), 'sbx-root-readme-'));
  });
  afterEach(async () => {
    vi.restoreAllMocks();
    await rm(home, { recursive: true, force: true });
  });

  it('runs, and runs again on the same data directory with the same output', async () => {
    const printed: unknown[] = [];
    vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => {
      printed.push(...args);
    });
    await runReadmeExample(README, { home });
    await runReadmeExample(README, { home });
    expect(printed).toEqual(['OK', 'hello\n', 'OK', 'hello\n']);
  });
});
