import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ManualClock } from '@sbx/core/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { E2BRemoteSandbox } from './e2b-client.js';
import { E2BSandbox } from './e2b-sandbox.js';
import { OUTPUT_SYNC_MANIFEST, mtimeToNs, syncOutputs } from './output-sync.js';
import { FakeE2BClient } from './testing/fake-e2b-client.js';
import { fakeErrors } from './testing/fake-e2b-errors.js';

let fake: FakeE2BClient;
let remote: E2BRemoteSandbox;
let sandbox: E2BSandbox;
let threadDir: string;
const clock = new ManualClock(0);

beforeEach(async () => {
  fake = new FakeE2BClient();
  remote = await fake.create({ template: 'base', metadata: {} });
  sandbox = new E2BSandbox('s', remote);
  threadDir = await mkdtemp(path.join(os.tmpdir(), 'sbx-e2b-sync-'));
});
afterEach(async () => {
  await fake.dispose();
  await rm(threadDir, { recursive: true, force: true });
});
const reads = () => fake.callsOf('read').map((c) => (c.detail as { path: string }).path);

describe('§8.2 output mirroring', () => {
  it('§8.2.58 records variable-precision mtimes exactly', () => {
    expect(mtimeToNs('1700000000.1234567891')).toBe('1700000000123456789');
    expect(mtimeToNs('1700000000.5')).toBe('1700000000500000000');
    expect(mtimeToNs('1700000000')).toBe('1700000000000000000');
    expect(mtimeToNs('nope')).toBeUndefined();
  });

  it('§8.2.62 a gone listing marks the adapter dead; a closed adapter is a no-op', async () => {
    fake.fail('run', fakeErrors.notRunning());
    await syncOutputs(sandbox, threadDir, { clock });
    expect(sandbox.isDead).toBe(true);
    const other = new E2BSandbox('o', await fake.create({ template: 'base', metadata: {} }));
    await other.close();
    const before = fake.calls.length;
    expect(await syncOutputs(other, threadDir, { clock })).toEqual({
      downloaded: [],
      skipped: 0,
      truncated: false,
    });
    expect(fake.calls).toHaveLength(before);
  });

  it('§8.2.62 downloads go through the adapter (physical home path, mapped from /mnt/user-data)', async () => {
    await remote.files.write('/home/user/outputs/r.txt', 'report');
    await syncOutputs(sandbox, threadDir, { clock });
    expect(reads()).toEqual(['/home/user/outputs/r.txt']);
    expect(await readFile(path.join(threadDir, 'user-data/outputs/r.txt'), 'utf8')).toBe('report');
  });

  it('§8.2.63 the file cap truncates a pass; unseen entries survive; two capped passes converge', async () => {
    for (const n of ['a', 'b', 'c']) await remote.files.write(`/home/user/outputs/${n}.txt`, n);
    const first = await syncOutputs(sandbox, threadDir, { clock, maxFiles: 2 });
    expect(first).toMatchObject({ truncated: true });
    expect(first.downloaded).toHaveLength(2);
    const second = await syncOutputs(sandbox, threadDir, { clock, maxFiles: 2 });
    expect(second.downloaded).toHaveLength(1);
    expect(second.truncated).toBe(false);
    const manifest = JSON.parse(await readFile(path.join(threadDir, OUTPUT_SYNC_MANIFEST), 'utf8'));
    expect(Object.keys(manifest.files).sort()).toEqual([
      'outputs/a.txt',
      'outputs/b.txt',
      'outputs/c.txt',
    ]);
    const third = await syncOutputs(sandbox, threadDir, { clock, maxFiles: 2 });
    expect(third).toMatchObject({ downloaded: [], skipped: 3 });
  });

  it('§8.2.63 the byte budget stops a pass', async () => {
    await remote.files.write('/home/user/outputs/big.txt', 'x'.repeat(100));
    const result = await syncOutputs(sandbox, threadDir, { clock, maxBytes: 10 });
    expect(result).toMatchObject({ downloaded: [], truncated: true });
  });
});
