import { describe, expect, it } from 'vitest';
import { SecretMasker } from './response-secret-mask.js';

const SECRET = ['tok', 'en-', 'abcdef', '123456'].join('');

function run(masker: SecretMasker, parts: string[]): string {
  const out = parts.map((p) => masker.push(Buffer.from(p, 'latin1')).toString('latin1'));
  return out.join('') + masker.flush().toString('latin1');
}

describe('SecretMasker', () => {
  it('masks a secret split over every possible pair of chunks, keeping the length', () => {
    const text = `{"echo":"Bearer ${SECRET}"}`;
    for (let cut = 0; cut <= text.length; cut += 1) {
      const masker = new SecretMasker();
      masker.add(SECRET);
      const out = run(masker, [text.slice(0, cut), text.slice(cut)]);
      expect(out, `cut at ${cut}`).toBe(`{"echo":"Bearer ${'*'.repeat(SECRET.length)}"}`);
    }
  });

  it('masks a secret sent one byte per chunk, and never emits its last byte unmasked', () => {
    const masker = new SecretMasker();
    masker.add(SECRET);
    const emitted = [...SECRET].map((c) => masker.push(Buffer.from(c)).toString('latin1')).join('');
    expect(emitted).toBe('*'.repeat(SECRET.length));
  });

  it('passes text that only starts like the secret, releasing short held starts at the end', () => {
    const masker = new SecretMasker();
    masker.add(SECRET);
    expect(run(masker, ['a tok', 'en-x and ', 'tok'])).toBe('a token-x and tok');
  });

  it('masks a long start of the secret held at the end of a body', () => {
    const masker = new SecretMasker();
    masker.add(SECRET);
    expect(run(masker, ['x ', SECRET.slice(0, 10)])).toBe(`x ${'*'.repeat(10)}`);
  });

  it('masks every occurrence in a head', () => {
    const masker = new SecretMasker();
    masker.add(SECRET);
    const head = Buffer.from(`X-A: ${SECRET}\r\nX-B: ${SECRET}${SECRET}`);
    expect(masker.maskAll(head).toString()).not.toContain(SECRET);
  });
});
