import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { redactSecrets } from '../config/env-policy.js';
import { WHOLE_REWRITE_CHARS, rewriteReach, rewriteThenTruncateMiddle } from './bounded-rewrite.js';
import { middleMarker, truncateMiddle } from './truncation.js';

// Built at run time, so no literal in this file is what the rewrite looks for.
const HOST = ['', 'srv', 'gateway', 'tenants', 'u1', 'threads', 't1'].join('/');
const SECRET = ['sk', 'live', 'Q7x9', 'Z2m4', 'W8p1'].join('_');
const env = { TOKEN: SECRET };

/** Masks the host prefix (line-local, like the real masker) and redacts the secret. */
function counting() {
  let chars = 0;
  const rewrite = (text: string) => {
    chars += text.length;
    return redactSecrets(text.split(HOST).join('/mnt/user-data'), env);
  };
  return { rewrite, chars: () => chars };
}

const reach = rewriteReach([SECRET]);

/** The head and tail the cut keeps, without the marker. */
function keptParts(out: string, maxChars: number) {
  const kept = maxChars - middleMarker(Number.MAX_SAFE_INTEGER).length;
  const head = Math.floor(kept / 2);
  return { head: out.slice(0, head), tail: out.slice(out.length - (kept - head)) };
}

describe('rewriteThenTruncateMiddle', () => {
  it('is truncateMiddle(rewrite(text)) for text it rewrites whole', () => {
    const { rewrite } = counting();
    const text = `${HOST}/a ${SECRET}\n`.repeat(2_000);
    expect(text.length).toBeLessThan(WHOLE_REWRITE_CHARS);
    expect(rewriteThenTruncateMiddle(text, rewrite, 5_000, reach)).toBe(
      truncateMiddle(rewrite(text), 5_000),
    );
  });

  it('rewrites a 20 MiB output only where the cut keeps it, and keeps what the whole rewrite keeps', () => {
    const { rewrite, chars } = counting();
    const line = `ok ${HOST}/src/main.ts ${SECRET} done\n`;
    const text = line.repeat(Math.ceil((20 * 1024 * 1024) / line.length));
    const out = rewriteThenTruncateMiddle(text, rewrite, 20_000, reach);
    // Two windows of about the cap plus the reach: not 20 MiB of masking.
    expect(chars()).toBeLessThan(200_000);
    expect(out.length).toBeLessThanOrEqual(20_000);
    expect(out).not.toContain(HOST);
    expect(out).not.toContain(SECRET);
    const whole = truncateMiddle(counting().rewrite(text), 20_000);
    const mine = keptParts(out, 20_000);
    expect(whole.startsWith(mine.head)).toBe(true);
    expect(whole.endsWith(mine.tail)).toBe(true);
    expect(out).toMatch(/middle truncated: \d+ chars skipped/);
  });

  it('keeps a window wide enough when masking shrinks it (a flood of host paths)', () => {
    const { rewrite } = counting();
    const line = `${HOST}${HOST}${HOST}\n`;
    const text = line.repeat(Math.ceil((2 * 1024 * 1024) / line.length));
    const out = rewriteThenTruncateMiddle(text, rewrite, 50_000, reach);
    expect(out).not.toContain(HOST);
    const whole = truncateMiddle(rewrite(text), 50_000);
    const mine = keptParts(out, 50_000);
    expect(whole.startsWith(mine.head)).toBe(true);
    expect(whole.endsWith(mine.tail)).toBe(true);
  });

  it('never shows a host path or secret cut by a window edge (random layouts, no line breaks too)', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.constant(HOST),
            fc.constant(SECRET),
            fc.constant('\n'),
            fc.string({ maxLength: 40 }).map((s) => s.replace(/[\n/_]/g, 'x')),
            fc.integer({ min: 1, max: 20_000 }).map((n) => 'y'.repeat(n)),
          ),
          { minLength: 30, maxLength: 200 },
        ),
        fc.integer({ min: 200, max: 30_000 }),
        (parts, maxChars) => {
          const text = parts.join('').padEnd(WHOLE_REWRITE_CHARS + 1, 'z') + parts.join('');
          const { rewrite } = counting();
          const out = rewriteThenTruncateMiddle(text, rewrite, maxChars, reach);
          expect(out.length).toBeLessThanOrEqual(maxChars);
          const whole = truncateMiddle(rewrite(text), maxChars);
          const mine = keptParts(out, maxChars);
          expect(whole.startsWith(mine.head)).toBe(true);
          expect(whole.endsWith(mine.tail)).toBe(true);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('widens a window that shrank to within reach of what it keeps (a secret cut by its edge)', () => {
    const maxChars = 20_000;
    const kept = maxChars - middleMarker(Number.MAX_SAFE_INTEGER).length;
    const headChars = Math.floor(kept / 2);
    const width = headChars + 2 * reach;
    const shrink = HOST.length - '/mnt/user-data'.length;
    const paths = Math.floor((2 * reach) / shrink);
    const leftover = 2 * reach - paths * shrink;
    // The secret starts this far before the first window's edge: cut by it, and after the shrink
    // its first few characters fall inside the head the cut keeps.
    const visible = Math.min(6, SECRET.length - 1 - leftover);
    expect(visible).toBeGreaterThan(0);
    const inside = leftover + visible;
    const prefix = HOST.repeat(paths);
    const text =
      prefix.padEnd(width - inside, '.') + SECRET + '.'.repeat(WHOLE_REWRITE_CHARS + maxChars);
    const out = rewriteThenTruncateMiddle(text, counting().rewrite, maxChars, reach);
    const whole = truncateMiddle(counting().rewrite(text), maxChars);
    expect(out).not.toContain(SECRET.slice(0, visible));
    expect(whole.startsWith(keptParts(out, maxChars).head)).toBe(true);
  });

  it('widens the tail window the same way', () => {
    const maxChars = 20_000;
    const kept = maxChars - middleMarker(Number.MAX_SAFE_INTEGER).length;
    const tailChars = kept - Math.floor(kept / 2);
    const width = tailChars + 2 * reach;
    const shrink = HOST.length - '/mnt/user-data'.length;
    const paths = Math.floor((2 * reach) / shrink);
    const leftover = 2 * reach - paths * shrink;
    const visible = Math.min(6, SECRET.length - 1 - leftover);
    expect(visible).toBeGreaterThan(0);
    const inside = leftover + visible;
    const suffix = HOST.repeat(paths).padStart(width - inside, '.');
    const text = '.'.repeat(WHOLE_REWRITE_CHARS + maxChars) + SECRET + suffix;
    const out = rewriteThenTruncateMiddle(text, counting().rewrite, maxChars, reach);
    const whole = truncateMiddle(counting().rewrite(text), maxChars);
    expect(out).not.toContain(SECRET.slice(-visible));
    expect(whole.endsWith(keptParts(out, maxChars).tail)).toBe(true);
  });

  it('rewrites the whole text when the widened windows meet', () => {
    const line = `${HOST}${HOST}${HOST}\n`;
    const text = line.repeat(Math.ceil((300 * 1024) / line.length));
    const { rewrite } = counting();
    expect(rewriteThenTruncateMiddle(text, rewrite, 150_000, reach)).toBe(
      truncateMiddle(rewrite(text), 150_000),
    );
  });

  it('never returns more than maxChars, even for a cap shorter than the marker', () => {
    const { rewrite } = counting();
    const text = `${SECRET} ${HOST}/a\n`.repeat(20_000);
    expect(text.length).toBeGreaterThan(WHOLE_REWRITE_CHARS);
    for (const maxChars of [1, 10, 40]) {
      const out = rewriteThenTruncateMiddle(text, rewrite, maxChars, reach);
      // What a cap too short for the marker keeps is the rewritten head, as truncateMiddle keeps it.
      expect(out).toBe(truncateMiddle(rewrite(text), maxChars));
    }
    const markerOnly = middleMarker(Number.MAX_SAFE_INTEGER).length;
    expect(rewriteThenTruncateMiddle(text, rewrite, markerOnly, reach).length).toBeLessThanOrEqual(
      markerOnly,
    );
  });

  it('keeps no part of a secret that only matches once a host path the edge cuts is masked', () => {
    // A secret that ends in a virtual path matches only after masking; a window edge inside the host
    // path leaves both the path and the secret's start unrewritten: the two reaches add up.
    const virtual = '/mnt/user-data';
    const secret = 'k'.repeat(4096 - virtual.length) + virtual;
    const maxChars = 1_000;
    const secretReach = rewriteReach([secret]);
    const headChars = Math.floor((maxChars - middleMarker(Number.MAX_SAFE_INTEGER).length) / 2);
    // The head window after three doublings (each rewrite shrank below what the head keeps).
    const edge = (headChars + 2 * secretReach) * 8;
    const cut = 1_500;
    const layout = (() => {
      for (let hostLength = 3_000; hostLength < 4_096; hostLength++) {
        const copies = Math.floor(
          (edge - (secret.length - virtual.length) - cut) / (hostLength + 1),
        );
        const into = edge - (secret.length - virtual.length) - copies * (hostLength + 1);
        if (into <= hostLength - 10) return { hostLength, copies };
      }
      throw new Error('no layout');
    })();
    const host = ['', 'srv', 'd'.repeat(layout.hostLength - 5)].join('/');
    const rewrite = (text: string) => redactSecrets(text.split(host).join(virtual), [secret]);
    const text =
      `${host} `.repeat(layout.copies) +
      secret.slice(0, secret.length - virtual.length) +
      `${host}/x ` +
      'f'.repeat(400_000);
    const out = rewriteThenTruncateMiddle(text, rewrite, maxChars, rewriteReach([secret]));
    const whole = truncateMiddle(rewrite(text), maxChars);
    expect(whole).not.toContain('kkkkkkkk');
    expect(out).not.toContain('kkkkkkkk');
    expect(whole.startsWith(keptParts(out, maxChars).head)).toBe(true);
  });
});
