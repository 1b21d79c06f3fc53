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

  it('after an idle spell one turn still hands on at most a turn of credit', async () => {
    let now = 0;
    const queued: (() => void)[] = [];
    const pacer = new OutputPacer({
      bytesPerTurn: 100,
      bytesPerSecond: 1_000_000,
      now: () => now,
      later: (callback) => queued.push(callback),
    });
    const source = new PassThrough();
    let got = 0;
    pacer.pace(source, (chunk) => (got += chunk.length));
    for (let i = 0; i < 20; i++) source.write(Buffer.alloc(50));
    await ticks();
    expect(got).toBe(100);
    now += 60_000; // a minute of credit accrues; a turn may spend only its own
    got = 0;
    for (const callback of queued.splice(0)) callback();
    await ticks();
    expect(got).toBeLessThanOrEqual(150);
  });

  it('in debt, the next refill waits until the rate has paid it back, with streams still waiting', async () => {
    const now = 0;
    const delays: number[] = [];
    const queued: (() => void)[] = [];
    const pacer = new OutputPacer({
      bytesPerTurn: 100,
      bytesPerSecond: 1000, // a byte a millisecond
      now: () => now,
      later: (callback, delayMs) => {
        delays.push(delayMs);
        queued.push(callback);
      },
    });
    const source = new PassThrough();
    pacer.pace(source, () => {});
    source.write(Buffer.alloc(150));
    source.write(Buffer.alloc(150));
    await ticks();
    // 150 spent of 100: 50 in debt, paid back in 51 ms.
    expect(delays).toEqual([51]);
    for (const callback of queued.splice(0)) callback();
    expect(pacer.waitingStreams).toBe(1);
    expect(delays.at(-1)).toBeGreaterThan(0);
  });

  it('a waiting source that throws when served is dropped from the line and reported; the others are served', async () => {
    const errors: unknown[] = [];
    const queued: (() => void)[] = [];
    const pacer = new OutputPacer({
      bytesPerTurn: 10,
      later: (callback) => queued.push(callback),
      onServeError: (error) => errors.push(error),
    });
    expect(pacer.take(10)).toBe(true);
    let served = 0;
    pacer.whenCredit(() => {
      throw new Error('serve bug');
    });
    pacer.whenCredit(() => ((served += 1), true));
    for (let turns = 0; queued.length > 0 && turns < 10; turns++) {
      for (const callback of queued.splice(0)) expect(callback).not.toThrow();
    }
    expect(served).toBe(1);
    expect(errors).toHaveLength(1);
    expect(pacer.waitingStreams).toBe(0);
  });

  it('refuses a budget that is not a positive integer', () => {
    expect(() => new OutputPacer({ bytesPerTurn: 0 })).toThrow(RangeError);
  });
});
