import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ManualClock } from '@sbx/core/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { E2BRemoteSandbox } from './e2b-client.js';
import { recordingLogger } from './test-support.js';
import { FakeE2BClient } from './testing/fake-e2b-client.js';
import { UploadPass, uploadTree } from './tree-upload.js';

let fake: FakeE2BClient;
let remote: E2BRemoteSandbox;
let host: string;
let clock: ManualClock;

beforeEach(async () => {
  fake = new FakeE2BClient();
  remote = await fake.create({ template: 'base', metadata: {} });
  host = await mkdtemp(path.join(os.tmpdir(), 'sbx-e2b-upload-'));
  clock = new ManualClock(0);
});
afterEach(async () => {
  await fake.dispose();
  await rm(host, { recursive: true, force: true });
});

async function tree(name: string, files: Record<string, number>): Promise<string> {
  const root = path.join(host, name);
  for (const [rel, size] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(root, rel)), { recursive: true });
    await writeFile(path.join(root, rel), 'x'.repeat(size));
  }
  return root;
}
const writes = () => fake.callsOf('write').map((c) => (c.detail as { path: string }).path);

describe('§8.2 one-shot uploads', () => {
  it('§8.2.23 uploads stream file contents to their destination', async () => {
    const src = await tree('m', { 'a.txt': 3, 'd/b.txt': 5 });
    await uploadTree(remote, src, '/opt/data', new UploadPass(clock));
    expect(await remote.files.read('/opt/data/d/b.txt')).toBe('xxxxx');
    expect(writes().sort()).toEqual(['/opt/data/a.txt', '/opt/data/d/b.txt']);
  });

  it('§8.2.24 a file that changes between preflight and open aborts the tree', async () => {
    const src = await tree('m', { 'a.txt': 3 });
    fake.gate.pause('makeDir', { times: 1 });
    const logger = recordingLogger();
    const pending = uploadTree(remote, src, '/opt/data', new UploadPass(clock), { logger });
    const held = await fake.gate.nextCall('makeDir');
    await writeFile(path.join(src, 'a.txt'), 'grown!');
    await held.release();
    await pending;
    expect(writes()).toEqual([]);
    expect(logger.text('warn')).toContain('changed during upload preflight');
  });

  it('§8.2.25 an oversized file, tree or file count rejects the whole tree before any write', async () => {
    const cases: [Record<string, number>, Partial<UploadPass['limits']>, string][] = [
      [{ 'a.txt': 10 }, { maxFileSize: 5 }, 'exceeds the 5-byte file limit'],
      [{ 'a.txt': 4, 'b.txt': 4 }, { maxTotalSize: 6 }, 'exceeds the 6-byte total limit'],
      [{ 'a.txt': 1, 'b.txt': 1, 'c.txt': 1 }, { maxFiles: 2 }, 'exceeds the 2-file limit'],
    ];
    for (const [i, [files, limits, message]] of cases.entries()) {
      const logger = recordingLogger();
      await uploadTree(
        remote,
        await tree(`t${i}`, files),
        `/opt/t${i}`,
        new UploadPass(clock, limits),
        { logger },
      );
      expect(logger.text('warn')).toContain(message);
    }
    expect(writes()).toEqual([]);
  });

  it('§8.2.26 one tree over its limits does not stop the next one', async () => {
    const pass = new UploadPass(clock, { maxFileSize: 5 });
    await uploadTree(remote, await tree('big', { 'a.txt': 10 }), '/opt/big', pass);
    await uploadTree(remote, await tree('ok', { 'a.txt': 2 }), '/opt/ok', pass);
    expect(writes()).toEqual(['/opt/ok/a.txt']);
  });

  it('§8.2.27/31 the pass-wide byte and file budgets stop later trees with a logged reason', async () => {
    const logger = recordingLogger();
    const pass = new UploadPass(clock, { passFiles: 2 }, logger);
    await uploadTree(remote, await tree('one', { 'a.txt': 1, 'b.txt': 1 }), '/opt/one', pass);
    await uploadTree(remote, await tree('two', { 'c.txt': 1 }), '/opt/two', pass);
    expect(writes()).toHaveLength(2);
    const line = logger.lines.find((l) => l.msg.includes('reason='))!;
    expect(line.msg).toContain('file count cap 2');
    expect(line.fields).toMatchObject({ attempted_files: 2, attempted_bytes: 2 });
    const bytes = new UploadPass(clock, { passBytes: 3 }, logger);
    await uploadTree(remote, await tree('three', { 'a.txt': 2, 'b.txt': 2 }), '/opt/three', bytes);
    expect(bytes.stopped).toContain('total byte budget 3');
  });

  it('§8.2.28 a read-only tree stopped mid-way is still write-protected; one with no attempt is not', async () => {
    const pass = new UploadPass(clock, { passFiles: 1 });
    await uploadTree(remote, await tree('ro', { 'a.txt': 1, 'b.txt': 1 }), '/opt/ro', pass, {
      readOnly: true,
    });
    const chmods = () =>
      fake.callsOf('run').filter((c) => (c.detail as { cmd: string }).cmd.includes('chmod'));
    expect(chmods()).toHaveLength(1);
    await uploadTree(remote, await tree('ro2', { 'a.txt': 1 }), '/opt/ro2', pass, {
      readOnly: true,
    });
    expect(chmods()).toHaveLength(1);
  });

  it('§8.2.29 a failed write still consumes the pass budget', async () => {
    fake.fail('write', new Error('disk full'));
    const pass = new UploadPass(clock, { passBytes: 4 });
    await uploadTree(remote, await tree('m', { 'a.txt': 1 }), '/opt/m', pass);
    expect(pass).toMatchObject({ attemptedFiles: 1, attemptedBytes: 1, completedFiles: 0 });
  });

  it('§8.2.30 the deadline stops the pass before the next file', async () => {
    const pass = new UploadPass(clock, { passDeadlineMs: 1000 });
    fake.gate.pause('write', { times: 1 });
    const pending = uploadTree(remote, await tree('m', { 'a.txt': 1, 'b.txt': 1 }), '/opt/m', pass);
    const held = await fake.gate.nextCall('write');
    await clock.advance(1500);
    await held.release();
    await pending;
    expect(writes()).toHaveLength(1);
    expect(pass.stopped).toContain('time budget');
    await uploadTree(remote, await tree('n', { 'c.txt': 1 }), '/opt/n', pass);
    expect(writes()).toHaveLength(1);
  });

  it('§8.2.32 the summary log names destination, files, bytes and elapsed_ms', async () => {
    const logger = recordingLogger();
    await uploadTree(remote, await tree('m', { 'a.txt': 4 }), '/opt/m', new UploadPass(clock), {
      logger,
    });
    const info = logger.lines.find((l) => l.level === 'info')!;
    expect(info.fields).toMatchObject({ destination: '/opt/m', files: 1, bytes: 4 });
    expect(info.fields).toHaveProperty('elapsed_ms');
  });

  it('strict mode (skill sync) raises instead of skipping', async () => {
    await expect(
      uploadTree(
        remote,
        await tree('m', { 'a.txt': 10 }),
        '/opt/m',
        new UploadPass(clock, { maxFileSize: 1 }),
        { strict: true },
      ),
    ).rejects.toThrow(/file limit/);
  });
});
