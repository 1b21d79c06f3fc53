import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { Refusal } from './egress-refusal.js';
import { readUntil } from './socket-reader.js';

describe('readUntil', () => {
  it('attack: a head sent one byte per packet is gathered with linear copying (a handful of buffers, not one per byte)', async () => {
    const socket = new PassThrough();
    const head = Buffer.from(`GET / HTTP/1.1\r\nX: ${'a'.repeat(16_000)}\r\n\r\n`, 'latin1');
    const buffers = new Set<ArrayBufferLike>();
    let scanned = 0;
    const read = readUntil(socket, Buffer.alloc(0), 32 * 1024, 60_000, (data, seen) => {
      buffers.add(data.buffer);
      // What a search that looks only at new bytes scans; a rescan of everything would be n².
      scanned += data.length - seen;
      const end = data.indexOf('\r\n\r\n', Math.max(0, seen - 3), 'latin1');
      return end === -1 ? 'more' : end;
    });
    for (const byte of head) socket.write(Buffer.from([byte]));
    const result = await read;
    expect(result).not.toBeInstanceOf(Refusal);
    if (result instanceof Refusal) return;
    expect(result.data.subarray(0, result.end + 4).equals(head)).toBe(true);
    // Doubling from 1 KiB to 32 KiB: at most a dozen buffers for 16,000 one-byte packets.
    expect(buffers.size).toBeLessThanOrEqual(12);
    expect(scanned).toBe(head.length);
  });

  it('never writes into the bytes it was handed: the first chunk moves them to a buffer of its own', async () => {
    const socket = new PassThrough();
    const shared = Buffer.from('GET / HT');
    const before = Buffer.from(shared);
    const read = readUntil(socket, shared, 1024, 60_000, (data) => {
      const end = data.indexOf('\r\n\r\n', 0, 'latin1');
      return end === -1 ? 'more' : end;
    });
    socket.write(Buffer.from('TP/1.1\r\n\r\nrest'));
    const result = await read;
    expect(result).not.toBeInstanceOf(Refusal);
    expect(shared.equals(before)).toBe(true);
  });

  it('refuses past max with 431, whatever the packet size', async () => {
    const socket = new PassThrough();
    const read = readUntil(socket, Buffer.alloc(0), 100, 60_000, () => 'more');
    for (let i = 0; i < 200; i++) socket.write(Buffer.from('a'));
    const result = await read;
    expect(result).toBeInstanceOf(Refusal);
    expect((result as Refusal).status).toBe(431);
  });
});
