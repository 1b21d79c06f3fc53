import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { runReadmeExample } from './readme-example.js';

const README = path.join(import.meta.dirname, '..', '..', 'README.md');

describe("the root README's 'Using it' examples", () => {
  let home: string;
  let printed: unknown[];
  beforeEach(async () => {
    home = await mkdtemp(path.join(tmpdir(), 'sbx-root-readme-'));
    printed = [];
    vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => {
      printed.push(...args);
    });
  });
  afterEach(async () => {
    vi.restoreAllMocks();
    await rm(home, { recursive: true, force: true });
  });

  it('the one-line sandbox runs, and runs again on the same data directory', async () => {
    await runReadmeExample(README, { home, nth: 0 });
    await runReadmeExample(README, { home, nth: 0 });
    expect(printed).toEqual(['hello from workspace\n', 0, 'hello from workspace\n', 0]);
  });

  it('the agent tools example runs, and runs again on the same data directory', async () => {
    await runReadmeExample(README, { home, nth: 1 });
    await runReadmeExample(README, { home, nth: 1 });
    expect(printed).toEqual(['OK', 'hello\n', 'OK', 'hello\n']);
  });

  it('both run one after the other on one data directory', async () => {
    await runReadmeExample(README, { home, nth: 1 });
    await runReadmeExample(README, { home, nth: 0 });
    await runReadmeExample(README, { home, nth: 1 });
    expect(printed).toEqual(['OK', 'hello\n', 'hello from workspace\n', 0, 'OK', 'hello\n']);
  });
});
