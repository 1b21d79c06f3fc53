import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { forEachOccurrence } from './literal-occurrences.js';

/** What `indexOf` finds, each search starting after the previous match. */
function reference(text: string, needle: string): number[] {
  const out: number[] = [];
  for (let at = text.indexOf(needle); at >= 0; at = text.indexOf(needle, at + needle.length)) {
    out.push(at);
  }
  return out;
}

async function found(text: string, needle: string): Promise<number[]> {
  const out: number[] = [];
  const count = await forEachOccurrence(Buffer.from(text), Buffer.from(needle), (at) =>
    out.push(at),
  );
  expect(count).toBe(out.length);
  return out;
}

describe('forEachOccurrence', () => {
  it('property: finds exactly the non-overlapping occurrences indexOf finds', async () => {
    // A two-letter alphabet and needles past the 8-byte prefix make the prefix match often, so
    // the confirmation budget runs out and the Knuth-Morris-Pratt scan takes over.
    const letters = fc.constantFrom('a', 'b');
    await fc.assert(
      fc.asyncProperty(
        fc.array(letters, { maxLength: 400 }).map((a) => a.join('')),
        fc.array(letters, { minLength: 1, maxLength: 24 }).map((a) => a.join('')),
        async (text, needle) => {
          expect(await found(text, needle)).toEqual(reference(text, needle));
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('hands over to the linear scan where the native search would go quadratic', async () => {
    // Every position is a prefix candidate and every confirmation fails late.
    const text = Array.from({ length: 20_000 }, () => 'a').join('');
    const needle = `${text.slice(0, 50)}b`;
    expect(await found(`${text}${needle}${text}`, needle)).toEqual([20_000]);
  });

  it('lets the event loop turn during a long scan', async () => {
    const text = Buffer.from(Array.from({ length: 2 * 1024 * 1024 }, () => 'ab').join(''));
    let turned = false;
    let turnedBeforeLastMatch = false;
    setImmediate(() => (turned = true));
    await forEachOccurrence(text, Buffer.from('ab'), () => {
      turnedBeforeLastMatch = turned;
    });
    expect(turnedBeforeLastMatch).toBe(true);
  });

  it('refuses an empty needle', async () => {
    await expect(forEachOccurrence(Buffer.from('x'), Buffer.alloc(0), () => {})).rejects.toThrow(
      /must not be empty/,
    );
  });
});
