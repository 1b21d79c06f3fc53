import { describe, expect, it } from 'vitest';
import { execViaLauncher } from './launcher-exec.js';
import { OutputPacer } from './output-pacer.js';
import { PacedListener, pacedTextListener, type PacedTarget } from './paced-listener.js';
import type { LaunchedExit, ProcessLauncher } from './process-launcher.js';
import { ProcessTable } from './process-table.js';

/** A pacer whose turns the test runs: `turn()` runs every callback the pacer queued. */
function manualPacer(bytesPerTurn: number) {
  const queued: (() => void)[] = [];
  const pacer = new OutputPacer({ bytesPerTurn, later: (callback) => queued.push(callback) });
  const turn = () => {
    for (const callback of queued.splice(0)) callback();
  };
  return { pacer, turn, queued };
}

function recordingTarget() {
  const chunks: string[] = [];
  let ended = false;
  const target: PacedTarget = {
    write: (chunk) =>
      chunks.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString()),
    end: () => (ended = true),
  };
  return { target, chunks, ended: () => ended };
}

const bytes = (n: number, fill: string) => Buffer.alloc(n, fill);

describe('PacedListener', () => {
  it('hands on at most the turn credit, keeps order, and waits for later turns', () => {
    const { pacer, turn } = manualPacer(100);
    const { target, chunks } = recordingTarget();
    const paced = new PacedListener(target, { pacer });
    for (const fill of 'abcdef') paced.write(bytes(60, fill));
    // 60 + 60 spend the credit (the second goes whole on what is left); the rest waits raw.
    expect(chunks.map((c) => c[0])).toEqual(['a', 'b']);
    turn();
    expect(chunks.map((c) => c[0])).toEqual(['a', 'b', 'c', 'd']);
    // A chunk that arrives while others wait never overtakes them.
    paced.write('g');
    turn();
    turn();
    expect(chunks.map((c) => c[0]).join('')).toBe('abcdefg');
  });

  it('never lets a new chunk overtake queued ones, whatever the credit says', () => {
    // A credit that refuses the first chunk and grants every later one.
    let refused = false;
    const waiters: (() => boolean)[] = [];
    const credit = {
      take: () => (refused ? true : ((refused = true), false)),
      whenCredit: (serve: () => boolean) => waiters.push(serve),
    };
    const { target, chunks } = recordingTarget();
    const paced = new PacedListener(target, { pacer: credit });
    paced.write('first');
    paced.write('second');
    for (const serve of waiters.splice(0)) serve();
    expect(chunks).toEqual(['first', 'second']);
  });

  it('drops the oldest bytes past its bound, undecoded, and says how many before the rest', () => {
    const { pacer, turn } = manualPacer(10);
    const { target, chunks } = recordingTarget();
    const paced = new PacedListener(target, { pacer, maxQueuedBytes: 100 });
    paced.write(bytes(10, 'x')); // spends the turn's credit
    for (let i = 0; i < 50; i++) paced.write(bytes(10, String(i % 10)));
    expect(paced.droppedBytes).toBe(400);
    for (let i = 0; i < 20; i++) turn();
    expect(chunks[0]).toBe('x'.repeat(10));
    expect(chunks[1]).toMatch(/\[400 bytes of output dropped/);
    // What survives is the newest output, in order.
    expect(chunks.slice(2).join('')).toBe(
      Array.from({ length: 10 }, (_, i) => String(i).repeat(10)).join(''),
    );
  });

  it('ends its target only after everything queued was handed on', async () => {
    const { pacer, turn } = manualPacer(10);
    const { target, chunks, ended } = recordingTarget();
    const paced = new PacedListener(target, { pacer });
    paced.write(bytes(10, 'a'));
    paced.write(bytes(10, 'b'));
    paced.end();
    let drained = false;
    void paced.drained().then(() => (drained = true));
    await Promise.resolve();
    expect(ended()).toBe(false);
    expect(drained).toBe(false);
    turn();
    await Promise.resolve();
    expect(chunks.join('')).toBe('a'.repeat(10) + 'b'.repeat(10));
    expect(ended()).toBe(true);
    expect(drained).toBe(true);
  });
});

/** A remote-style backend: its output arrives through callbacks, all at once, unpausable. */
function pushingLauncher(chunks: number, chunkBytes: number, pacesOutput?: boolean) {
  let end!: (exit: LaunchedExit) => void;
  const launcher: ProcessLauncher = {
    ...(pacesOutput !== undefined ? { pacesOutput } : {}),
    launch: async (_command, _options, sink) => {
      for (let i = 0; i < chunks; i++) sink.stdout(bytes(chunkBytes, 'y'));
      const exited = new Promise<LaunchedExit>((resolve) => (end = resolve));
      return { exited, kill: async () => end({ exitCode: null, signal: 'SIGKILL' }) };
    },
  };
  return { launcher, end: (exit: LaunchedExit) => end(exit) };
}

describe('output a backend pushes through callbacks', () => {
  it('reaches an exec listener at the pace of the shared credit, all of it before exec returns', async () => {
    const { pacer, turn, queued } = manualPacer(64 * 1024);
    const { launcher, end } = pushingLauncher(64, 16 * 1024);
    const seen: number[] = [];
    const running = execViaLauncher(
      launcher,
      'flood',
      { onStdout: (text) => seen.push(text.length) },
      { timeoutMs: undefined, pacer },
    );
    await new Promise((resolve) => setImmediate(resolve));
    // One megabyte was pushed at once; one turn's credit of it reached the listener.
    expect(seen.reduce((a, b) => a + b, 0)).toBe(64 * 1024);
    end({ exitCode: 0 });
    let done = false;
    void running.then(() => (done = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(done).toBe(false);
    let turns = 0;
    while (queued.length > 0) {
      const before = seen.reduce((a, b) => a + b, 0);
      turn();
      turns += 1;
      expect(seen.reduce((a, b) => a + b, 0) - before).toBeLessThanOrEqual(64 * 1024);
    }
    const result = await running;
    expect(turns).toBeGreaterThanOrEqual(15);
    expect(seen.reduce((a, b) => a + b, 0)).toBe(1024 * 1024);
    // The kept output is not paced: it costs a copy, not a decode.
    expect(result.stdout.length).toBe(1024 * 1024);
  });

  it('is not paced twice for a launcher that paces its own output', async () => {
    const { pacer } = manualPacer(64 * 1024);
    const { launcher, end } = pushingLauncher(64, 16 * 1024, true);
    let seen = 0;
    const running = execViaLauncher(
      launcher,
      'flood',
      { onStdout: (text) => (seen += text.length) },
      { timeoutMs: undefined, pacer },
    );
    await new Promise((resolve) => setImmediate(resolve));
    expect(seen).toBe(1024 * 1024);
    end({ exitCode: 0 });
    await running;
  });

  it('reaches a background process listener at the pace of the shared credit', async () => {
    const { pacer, turn, queued } = manualPacer(64 * 1024);
    const { launcher, end } = pushingLauncher(64, 16 * 1024);
    const table = new ProcessTable({ launcher, stdin: false, pacer });
    let seen = 0;
    const handle = await table.start('flood', { onStdout: (text) => (seen += text.length) });
    expect(seen).toBe(64 * 1024);
    end({ exitCode: 0 });
    await handle.wait();
    while (queued.length > 0) turn();
    expect(seen).toBe(1024 * 1024);
    await table.close();
  });
});

describe('a paced target that throws', () => {
  it('is reported, gets nothing more, and stalls neither the shared pacer nor its own drain', async () => {
    const { pacer, turn, queued } = manualPacer(10);
    const errors: unknown[] = [];
    let calls = 0;
    const throwing = new PacedListener(
      {
        write: () => {
          calls += 1;
          if (calls === 2) throw new Error('listener bug');
        },
        end: () => undefined,
      },
      { pacer, onTargetError: (error) => errors.push(error) },
    );
    const other = recordingTarget();
    const neighbour = new PacedListener(other.target, { pacer });
    throwing.write(bytes(10, 'a')); // spends the turn's credit
    throwing.write(bytes(10, 'b'));
    throwing.write(bytes(10, 'c'));
    neighbour.write(bytes(10, 'n'));
    throwing.end();
    let turns = 0;
    while (queued.length > 0 && turns < 20) {
      expect(() => turn()).not.toThrow();
      turns += 1;
    }
    expect(errors).toHaveLength(1);
    expect(calls).toBe(2);
    expect(other.chunks.join('')).toBe('n'.repeat(10));
    await throwing.drained();
  });
});

describe('pacedTextListener', () => {
  it('paces text callbacks and hands on the rest when finished', async () => {
    const { pacer, turn, queued } = manualPacer(10);
    const seen: string[] = [];
    const paced = pacedTextListener((text) => seen.push(text), pacer);
    for (let i = 0; i < 5; i++) paced.listener?.('0123456789');
    expect(seen).toHaveLength(1);
    const finished = paced.finish();
    while (queued.length > 0) turn();
    await finished;
    expect(seen.join('')).toBe('0123456789'.repeat(5));
    expect(pacedTextListener(undefined, pacer).listener).toBeUndefined();
  });
});
