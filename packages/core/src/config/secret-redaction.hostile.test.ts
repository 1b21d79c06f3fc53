import { describe, expect, it } from 'vitest';
import { runIsolated } from '../testing/isolated-run.js';

/**
 * Command output is the agent's: it may repeat a secret that overlaps itself (a value with a short
 * period) millions of times. Finding every overlapping occurrence one by one costs the secret's
 * length per output character and one span per occurrence; each case runs in a child with a time
 * and memory limit, so a regression fails here instead of hanging the suite.
 */
describe('secret redaction is linear in the output (self-overlapping secrets)', () => {
  it.each([
    ['a period of 2', 'ab', 8_192, 4_000_000],
    ['a period of 1', 'z', 16_384, 8_000_000],
    ['a period of 7', 'q1w2e3r', 2_000, 1_000_000],
  ])(
    '%s, repeated through the whole output, is one placeholder',
    async (_name, unit, secretRepeats, textRepeats) => {
      const run = await runIsolated({
        timeoutMs: 60_000,
        maxOldSpaceMb: 256,
        script: `
        import { redactSecrets } from '@sbx/core';
        const unit = ${JSON.stringify(unit)};
        const secret = unit.repeat(${secretRepeats});
        const text = 'head ' + unit.repeat(${textRepeats}) + ' tail';
        console.log(redactSecrets(text, { KEY: secret }));
      `,
      });
      expect(run.timedOut, run.stderr).toBe(false);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout.trim()).toBe('head [redacted] tail');
    },
  );
});

/** Every occurrence found one by one, then overlapping ones merged: the quadratic reference. */
function naiveRedaction(text: string, secrets: string[]): string {
  const spans: [number, number][] = [];
  for (const secret of new Set(secrets.filter((s) => s.length >= 8))) {
    for (let at = text.indexOf(secret); at !== -1; at = text.indexOf(secret, at + 1)) {
      spans.push([at, at + secret.length]);
    }
  }
  spans.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  let out = '';
  let cursor = 0;
  for (let i = 0; i < spans.length;) {
    const start = spans[i]![0];
    let end = spans[i]![1];
    for (i++; i < spans.length && spans[i]![0] < end; i++) end = Math.max(end, spans[i]![1]);
    out += text.slice(cursor, start) + '[redacted]';
    cursor = end;
  }
  return out + text.slice(cursor);
}

describe('secret redaction agrees with finding every occurrence', () => {
  it('on random texts and self-overlapping secrets', async () => {
    const fc = (await import('fast-check')).default;
    const { redactSecrets } = await import('./env-policy.js');
    // Secrets and text cut from repetitions of short units: long periodic runs, partial periods.
    const periodic = fc
      .tuple(fc.stringMatching(/^[ab]{1,4}$/), fc.integer({ min: 0, max: 40 }), fc.nat(3))
      .map(([unit, length, skip]) => unit.repeat(20).slice(skip, skip + length));
    fc.assert(
      fc.property(
        fc.array(
          periodic.filter((s) => s.length >= 8),
          { minLength: 1, maxLength: 3 },
        ),
        fc.array(fc.oneof(periodic, fc.constantFrom('c', 'a', 'b')), { maxLength: 12 }),
        (secrets, pieces) => {
          const text = pieces.join('');
          expect(redactSecrets(text, secrets)).toBe(naiveRedaction(text, secrets));
        },
      ),
      { numRuns: 500 },
    );
  });
});
