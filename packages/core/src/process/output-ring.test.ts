import { describe, expect, it } from 'vitest';
import { OutputRing } from './output-ring.js';

describe('OutputRing', () => {
  it('keeps both streams in arrival order and reads on from a cursor', () => {
    const ring = new OutputRing(64);
    ring.append('stdout', 'a1\n');
    ring.append('stderr', 'e1\n');
    const first = ring.read();
    expect(first).toMatchObject({ text: 'a1\ne1\n', stdout: 'a1\n', stderr: 'e1\n', cursor: 6 });
    ring.append('stdout', 'a2\n');
    expect(ring.read({ since: first.cursor })).toMatchObject({
      text: 'a2\n',
      droppedBytes: 0,
      cursor: 9,
      more: false,
    });
  });

  it('drops the oldest output past its capacity and reports the gap to a stale cursor', () => {
    const ring = new OutputRing(10);
    ring.append('stdout', '0123456789');
    ring.append('stdout', 'abcde');
    expect(ring.start).toBe(5);
    const read = ring.read({ since: 0 });
    expect(read).toMatchObject({ text: '56789abcde', droppedBytes: 5, cursor: 15 });
  });

  it('keeps only the tail of a chunk larger than the whole buffer', () => {
    const ring = new OutputRing(4);
    ring.append('stderr', 'abcdefgh');
    expect(ring.read()).toMatchObject({ text: 'efgh', droppedBytes: 4, cursor: 8 });
  });

  it('cuts a read at maxBytes and says more is kept', () => {
    const ring = new OutputRing(100);
    ring.append('stdout', 'aaaa');
    ring.append('stdout', 'bbbb');
    const head = ring.read({ maxBytes: 6 });
    expect(head).toMatchObject({ text: 'aaaabb', cursor: 6, more: true });
    expect(ring.read({ since: head.cursor })).toMatchObject({ text: 'bb', more: false });
  });

  it('clamps cursors from the caller (negative, fractional, past the end)', () => {
    const ring = new OutputRing(100);
    ring.append('stdout', 'xyz');
    expect(ring.read({ since: -5 }).text).toBe('xyz');
    expect(ring.read({ since: 1.7 }).text).toBe('yz');
    expect(ring.read({ since: 1e12 })).toMatchObject({ text: '', cursor: 3 });
  });

  it('stays bounded under a flood of small chunks', () => {
    const ring = new OutputRing(1024);
    for (let i = 0; i < 100_000; i++) ring.append('stdout', 'x');
    const read = ring.read();
    expect(read.text.length).toBe(1024);
    expect(read.droppedBytes).toBe(100_000 - 1024);
  });

  it('refuses a capacity that is not a positive integer', () => {
    expect(() => new OutputRing(0)).toThrow(RangeError);
  });
});
