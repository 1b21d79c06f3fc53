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

describe('OutputRing with a rewrite (masking and redaction at read)', () => {
  const mask = (text: string) => text.replaceAll('/host/secret/dir', '/mnt/x');

  it('rewrites whole lines of each stream, a path split across chunks included', async () => {
    const ring = new OutputRing({ capacity: 1024, rewrite: mask });
    ring.append('stdout', 'in /host/sec');
    ring.append('stderr', 'warn\n');
    ring.append('stdout', 'ret/dir now\npartial /host/secret');
    await ring.settle();
    expect(ring.read()).toMatchObject({
      text: 'warn\nin /mnt/x now\n',
      stdout: 'in /mnt/x now\n',
      stderr: 'warn\n',
      droppedBytes: 0,
      more: false,
    });
    const first = ring.read();
    ring.append('stdout', '/dir\n');
    await ring.settle();
    expect(ring.read({ since: first.cursor }).text).toBe('partial /mnt/x\n');
  });

  it('shows the last partial line once the process has ended', async () => {
    const ring = new OutputRing({ capacity: 1024, rewrite: mask });
    ring.append('stdout', 'no newline at /host/secret/dir');
    await ring.settle();
    expect(ring.read().text).toBe('');
    ring.seal();
    await ring.settle();
    expect(ring.read().text).toBe('no newline at /mnt/x');
  });

  it('a flood of invalid UTF-8 stays within capacity, and what it dropped is counted, never decoded', async () => {
    const capacity = 64 * 1024;
    let rewritten = 0;
    const ring = new OutputRing({
      capacity,
      rewrite: (text) => {
        rewritten += text.length;
        return text;
      },
    });
    const junk = Buffer.alloc(16 * 1024, 0xff);
    const total = 4096 * junk.length; // 64 MiB
    for (let i = 0; i < 4096; i++) {
      ring.append(i % 2 === 0 ? 'stdout' : 'stderr', junk);
      expect(ring.keptBytes).toBeLessThanOrEqual(capacity);
    }
    ring.seal();
    await ring.settle();
    const read = ring.read();
    // Only what was still kept at the read was decoded and rewritten.
    expect(rewritten).toBeLessThanOrEqual(capacity);
    expect(read.droppedBytes).toBeGreaterThanOrEqual(total - capacity);
    expect(Buffer.byteLength(read.text)).toBeLessThanOrEqual(3 * capacity);
    expect(read.more).toBe(false);
  });

  it('after a gap a stream resumes at its next line end, so half a path is never shown', async () => {
    const ring = new OutputRing({ capacity: 32, rewrite: mask });
    ring.append('stdout', 'path: /host/sec');
    ring.append('stdout', 'x'.repeat(40)); // pushes the start of the path out unread
    ring.append('stdout', 'ret/dir/f\nafter\n');
    await ring.settle();
    const read = ring.read();
    expect(read.text).toBe('after\n');
    expect(read.droppedBytes).toBe(15 + 40 + 'ret/dir/f\n'.length);
  });

  it('a read past the last kept chunk moves over the dropped bytes after it (no endless "more")', async () => {
    const ring = new OutputRing({ capacity: 20, rewrite: (t) => t });
    ring.append('stdout', 'x'.repeat(25)); // larger than the ring: its head is dropped unread
    ring.append('stderr', 'err\n');
    ring.append('stdout', 'yy'); // still the rest of the cut line: dropped too
    await ring.settle();
    const read = ring.read();
    expect(read).toMatchObject({ text: 'err\n', cursor: 31, droppedBytes: 27, more: false });
    expect(ring.read({ since: read.cursor })).toMatchObject({ text: '', more: false });
  });

  it('clear() frees everything and a reader learns it was dropped', async () => {
    const ring = new OutputRing({ capacity: 1024, rewrite: mask });
    ring.append('stdout', 'kept\n');
    await ring.settle();
    ring.append('stdout', 'pending\n');
    ring.clear();
    expect(ring.keptBytes).toBe(0);
    await ring.settle();
    expect(ring.read()).toMatchObject({ text: '', droppedBytes: 13, cursor: 13 });
  });

  it('settles a slice per turn of the loop, and concurrent settles share one run', async () => {
    let turns = 0;
    const ring = new OutputRing({
      capacity: 1024 * 1024,
      rewrite: (t) => t,
      yieldTurn: async () => {
        turns += 1;
      },
    });
    for (let i = 0; i < 16; i++) ring.append('stdout', `${'y'.repeat(32 * 1024 - 1)}\n`);
    await Promise.all([ring.settle(), ring.settle()]);
    expect(turns).toBeGreaterThanOrEqual(7);
    expect(ring.read().text.length).toBe(16 * 32 * 1024);
  });

  it('a small view into a large buffer is kept as a copy (the ring counts only the view)', () => {
    const ring = new OutputRing({ capacity: 1024 });
    const frame = new Uint8Array(1024 * 1024);
    ring.append('stdout', frame.subarray(10, 20));
    frame.fill(0x41);
    expect(ring.keptBytes).toBe(10);
    expect(ring.read().text).toBe('\0'.repeat(10));
  });

  it('a running process printing one endless line is shown in pieces, not held back whole', async () => {
    const ring = new OutputRing({ capacity: 1024 * 1024, rewrite: (t) => t });
    ring.append('stdout', 'a'.repeat(200_000));
    await ring.settle();
    expect(ring.read().text.length).toBeGreaterThanOrEqual(64 * 1024);
  });

  it('a settle stops at what was appended when it began, however fast more comes', async () => {
    let turns = 0;
    const ring: OutputRing = new OutputRing({
      capacity: 1024 * 1024,
      rewrite: (t) => t,
      yieldTurn: async () => {
        turns += 1;
        if (turns < 1000) ring.append('stdout', `${'z'.repeat(64 * 1024)}\n`);
      },
    });
    ring.append('stdout', `${'z'.repeat(64 * 1024)}\n`);
    ring.append('stdout', `${'z'.repeat(64 * 1024)}\n`);
    await ring.settle();
    expect(turns).toBeLessThan(10);
  });

  it('concurrent settles are one run', () => {
    const ring = new OutputRing({ capacity: 1024, rewrite: (t) => t });
    ring.append('stdout', 'x\n');
    expect(ring.settle()).toBe(ring.settle());
  });

  it('clear() on a running process drops the rest of a line it cut, so no half path is shown', async () => {
    const ring = new OutputRing({ capacity: 1024, rewrite: mask });
    ring.append('stdout', 'at /host/sec');
    ring.clear();
    ring.append('stdout', 'ret/dir/x\nnext\n');
    await ring.settle();
    expect(ring.read().text).toBe('next\n');
  });
});
