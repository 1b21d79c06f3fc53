import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { OutputPacer } from './output-pacer.js';

/** A pacer whose turns the test runs: `turn()` is the next `setImmediate`. */
function manualPacer(bytesPerTurn: number) {
  const queued: (() => void)[] = [];
  const pacer = new OutputPacer({ bytesPerTurn, later: (callback) => queued.push(callback) });
  const turn = async () => {
    const due = queued.splice(0);
    for (const callback of due) callback();
    await ticks();
  };
  return { pacer, turn, queued };
}

/** Lets the streams' own ticks run (their flow is scheduled with process.nextTick). */
function ticks(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

describe('OutputPacer', () => {
  it('hands on at most the budget per turn and holds the rest with the stream paused', async () => {
    const { pacer, turn } = manualPacer(100);
    const source = new PassThrough();
    const got: number[] = [];
    const paced = pacer.pace(source, (chunk) => got.push(chunk.length));
    for (let i = 0; i < 10; i++) source.write(Buffer.alloc(60));
    await ticks();
    // 60 + 60 reach the budget; the third chunk waits, the stream is paused.
    expect(got).toEqual([60, 60]);
    expect(paced.waiting).toBe(true);
    expect(source.isPaused()).toBe(true);
    await turn();
    expect(got).toEqual([60, 60, 60, 60]);
    for (let i = 0; i < 10; i++) await turn();
    expect(got.reduce((a, b) => a + b, 0)).toBe(600);
    expect(paced.waiting).toBe(false);
  });

  it('shares one budget among all streams, serving waiting ones oldest first', async () => {
    const { pacer, turn } = manualPacer(100);
    const delivered: string[][] = [];
    let current: string[] = [];
    const sources = ['a', 'b', 'c'].map((name) => {
      const source = new PassThrough();
      pacer.pace(source, () => current.push(name));
      return source;
    });
    for (const source of sources) for (let i = 0; i < 4; i++) source.write(Buffer.alloc(50));
    await ticks();
    delivered.push(current);
    for (let i = 0; i < 8; i++) {
      current = [];
      await turn();
      delivered.push(current);
    }
    // No turn hands on more than the budget plus one chunk, whatever the number of streams.
    for (const names of delivered) expect(names.length * 50).toBeLessThanOrEqual(150);
    expect(delivered.flat().sort().join('')).toBe('aaaabbbbcccc');
    expect(pacer.waitingStreams).toBe(0);
  });

  it('a stream that ends while a chunk is held still delivers it and then ends', async () => {
    const { pacer, turn } = manualPacer(10);
    const source = new PassThrough();
    let total = 0;
    let ended = false;
    pacer.pace(source, (chunk) => (total += chunk.length));
    source.on('end', () => (ended = true));
    source.write(Buffer.alloc(10));
    source.end(Buffer.alloc(10));
    await ticks();
    expect(ended).toBe(false);
    await turn();
    await turn();
    expect(total).toBe(20);
    expect(ended).toBe(true);
  });

  it('refuses a budget that is not a positive integer', () => {
    expect(() => new OutputPacer({ bytesPerTurn: 0 })).toThrow(RangeError);
  });
});
