import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { MAX_CHUNK_LINE_BYTES, readChunkLine } from './chunk-line.js';
import { StreamReader } from './socket-reader.js';

function readerOf(pieces: readonly Buffer[]): StreamReader {
  const stream = new PassThrough();
  for (const piece of pieces) stream.write(piece);
  stream.end();
  return new StreamReader(stream);
}

const bytes = (text: string) => [...Buffer.from(text, 'latin1')].map((b) => Buffer.from([b]));

describe('readChunkLine', () => {
  it('attack: a line over the limit is refused also when its line end arrives in the same piece', async () => {
    const line = `1;${'x'.repeat(MAX_CHUNK_LINE_BYTES)}\r\n0\r\n\r\n`;
    expect(await readChunkLine(readerOf([Buffer.from(line, 'latin1')]))).toBe('too-long');
  });

  it('a line at the limit sent a byte per piece is read whole; one byte more is refused', async () => {
    const atLimit = `${'a'.repeat(MAX_CHUNK_LINE_BYTES - 1)}\r`;
    const read = await readChunkLine(readerOf(bytes(`${atLimit}\nnext`)));
    expect(read).not.toBe('too-long');
    expect(typeof read === 'object' && read.line.toString('latin1')).toBe(atLimit);
    expect(await readChunkLine(readerOf(bytes(`a${atLimit}\n`)))).toBe('too-long');
  });

  it('puts back what follows the line end for the next read', async () => {
    const reader = readerOf([Buffer.from('5\r\nhello\r\n', 'latin1')]);
    const first = await readChunkLine(reader);
    expect(typeof first === 'object' && first.line.toString('latin1')).toBe('5\r');
    expect((await reader.read())?.toString('latin1')).toBe('hello\r\n');
  });

  it('an end before the line end is said as such', async () => {
    expect(await readChunkLine(readerOf([Buffer.from('12', 'latin1')]))).toBe('ended');
  });
});
