import { describe, expect, it } from 'vitest';
import { runIsolated } from '../testing/isolated-run.js';

describe('checkpoint import: a gzip bomb', () => {
  it('attack: 1 GiB of zeros behind a valid header, from 1 MB of gzip, stops at the expansion bound with nothing written', async () => {
    // In a child with 128 MB of heap and a time limit: an import that expanded without a bound
    // would run out of time (or memory) there instead of in the test runner.
    const result = await runIsolated({
      maxOldSpaceMb: 128,
      timeoutMs: 120_000,
      script: `
        import { Readable } from 'node:stream';
        import { gzipSync } from 'node:zlib';
        import { mkdtempSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
        import { tmpdir } from 'node:os';
        import path from 'node:path';
        import tar from 'tar-stream';
        import { readCheckpoint } from '@sbx/core';
        const root = mkdtempSync(path.join(tmpdir(), 'sbx-bomb-'));
        const parent = path.join(root, 't');
        mkdirSync(parent);
        const header = tar.pack().constructor ? null : null;
        // A directory entry's header, then 64 gzip members of 16 MiB of zeros each.
        const head = Buffer.alloc(512);
        const p = tar.pack();
        const chunks = [];
        p.on('data', (c) => chunks.push(c));
        p.entry({ name: 'workspace/', type: 'directory' });
        p.finalize();
        await new Promise((r) => p.on('end', r));
        const member = gzipSync(Buffer.alloc(16 * 1024 * 1024));
        const parts = [gzipSync(Buffer.concat(chunks).subarray(0, 512))];
        for (let i = 0; i < 64; i += 1) parts.push(member);
        let code = 'none';
        try {
          await readCheckpoint(Readable.from(parts), path.join(parent, 'user-data'), {
            limits: { maxTotalBytes: 1024 * 1024, maxEntries: 16 },
          });
        } catch (err) {
          code = err.code + ':' + (err.details?.limit ?? '');
        }
        const left = readdirSync(parent).length;
        rmSync(root, { recursive: true, force: true });
        console.log(JSON.stringify({ code, left, compressed: member.length * 64 }));
      `,
    });
    expect(result.timedOut, result.stderr).toBe(false);
    const out = JSON.parse(result.stdout.trim().split('\\n').pop() ?? '{}') as {
      code: string;
      left: number;
      compressed: number;
    };
    expect(out.code, result.stderr).toBe('CHECKPOINT_LIMIT:expandedBytes');
    expect(out.left).toBe(0);
    expect(out.compressed).toBeLessThan(2 * 1024 * 1024);
  }, 180_000);
});
