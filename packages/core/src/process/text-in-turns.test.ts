import { describe, expect, it } from 'vitest';
import { decodeInTurns, rewriteInTurns } from './text-in-turns.js';

describe('decodeInTurns / rewriteInTurns', () => {
  it('decodes a slice per turn, a character split across slices included', async () => {
    let turns = 0;
    const text = `${'a'.repeat(64 * 1024 - 1)}\u20ac${'b'.repeat(200_000)}`;
    const decoded = await decodeInTurns(Buffer.from(text), async () => {
      turns += 1;
    });
    expect(decoded).toBe(text);
    expect(turns).toBeGreaterThanOrEqual(3);
  });

  it('rewrites a slice per turn, cut at line ends so a path across a slice boundary is whole', async () => {
    let turns = 0;
    const path = '/host/secret/dir';
    // Two lines in, the path of the second one straddles the 64 KiB slice boundary.
    const line = `${'x'.repeat(32_755)} ${path}\n`;
    const text = line.repeat(4);
    const out = await rewriteInTurns(
      text,
      (t) => t.replaceAll(path, '/mnt/x'),
      async () => {
        turns += 1;
      },
    );
    expect(out).not.toContain('/host');
    expect(out).toBe(text.replaceAll(path, '/mnt/x'));
    expect(turns).toBeGreaterThanOrEqual(3);
  });
});
