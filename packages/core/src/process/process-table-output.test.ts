import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { OutputPacer } from './output-pacer.js';
import { PacedListener } from './paced-listener.js';
import { Deferred } from '../testing/deferred.js';
import { ManualClock } from '../testing/manual-clock.js';
import type { LaunchedExit, ProcessLauncher, ProcessSink } from './process-launcher.js';
import { ProcessTable } from './process-table.js';
import { RetainedOutput } from './retained-output.js';

/** Processes that print what the test says and end when it says so. */
function printer(rewrite?: (text: string) => string) {
  const started: { sink: ProcessSink; exit: Deferred<LaunchedExit> }[] = [];
  const launcher: ProcessLauncher = {
    launch: async (_command, _options, sink) => {
      const exit = new Deferred<LaunchedExit>();
      started.push({ sink, exit });
      return {
        exited: exit.promise,
        kill: async (signal) => exit.resolve({ exitCode: null, signal }),
      };
    },
    ...(rewrite ? { outputRewrite: async () => rewrite } : {}),
  };
  return { launcher, started };
}

function tableOf(launcher: ProcessLauncher, retainedOutput = new RetainedOutput()) {
  return new ProcessTable({ launcher, stdin: false, clock: new ManualClock(), retainedOutput });
}

describe('ProcessTable: output kept for ended processes', () => {
  it('killRunning (release) and close free the output of ended processes; a reader learns it was dropped', async () => {
    const { launcher, started } = printer();
    const budget = new RetainedOutput();
    const table = tableOf(launcher, budget);
    const done = await table.start('build');
    started[0]!.sink.stdout('x'.repeat(1000));
    started[0]!.exit.resolve({ exitCode: 0 });
    await done.wait();
    expect(budget.retainedBytes).toBe(1000);
    const server = await table.start('server');
    started[1]!.sink.stdout('ready\n');
    await table.killRunning();
    expect(budget.retainedBytes).toBe(0);
    expect(await done.output()).toMatchObject({ text: '', droppedBytes: 1000, status: 'exited' });
    expect(await server.output()).toMatchObject({ text: '', droppedBytes: 6 });
    // The table stays open for the next turn, whose output is kept again.
    const next = await table.start('next');
    started[2]!.sink.stdout('hi');
    started[2]!.exit.resolve({ exitCode: 0 });
    await next.wait();
    expect(budget.retainedBytes).toBe(2);
    await table.close();
    expect(budget.retainedBytes).toBe(0);
  });

  it('one budget bounds the ended output of many tables; the oldest is freed first', async () => {
    const budget = new RetainedOutput(2500);
    const tables = [printer(), printer(), printer()].map((p) => ({
      ...p,
      table: tableOf(p.launcher, budget),
    }));
    const handles = [];
    for (const [i, { table, started }] of tables.entries()) {
      const handle = await table.start(`job${i}`);
      started[0]!.sink.stdout(String(i).repeat(1000));
      started[0]!.exit.resolve({ exitCode: 0 });
      await handle.wait();
      handles.push(handle);
    }
    expect(budget.retainedBytes).toBe(2000);
    expect((await handles[0]!.output()).droppedBytes).toBe(1000);
    expect((await handles[1]!.output()).text).toBe('1'.repeat(1000));
    expect((await handles[2]!.output()).text).toBe('2'.repeat(1000));
  });

  it('a process forgotten beyond keepEnded leaves the budget', async () => {
    const { launcher, started } = printer();
    const budget = new RetainedOutput();
    const table = new ProcessTable({
      launcher,
      stdin: false,
      clock: new ManualClock(),
      retainedOutput: budget,
      keepEnded: 1,
    });
    for (let i = 0; i < 2; i++) {
      const handle = await table.start(`c${i}`);
      started[i]!.sink.stdout('abc');
      started[i]!.exit.resolve({ exitCode: 0 });
      await handle.wait();
    }
    expect(budget.retainedBytes).toBe(3);
  });
});

describe('ProcessTable: a launcher that rewrites its output', () => {
  const mask = (text: string) => text.replaceAll('/host/dir', '/mnt/w');

  it('masks what is read and what listeners stream, a line at a time', async () => {
    const { launcher, started } = printer(mask);
    const table = tableOf(launcher);
    const streamed: string[] = [];
    const handle = await table.start('pwd', { onStdout: (t) => streamed.push(t) });
    const sink = started[0]!.sink;
    sink.stdout(Buffer.from('at /host/d'));
    sink.stdout(Buffer.from('ir\nnow /host'));
    expect((await handle.output()).text).toBe('at /mnt/w\n');
    sink.stdout(Buffer.from('/dir'));
    started[0]!.exit.resolve({ exitCode: 0 });
    await handle.wait();
    const all = await handle.output();
    expect(all.text).toBe('at /mnt/w\nnow /mnt/w');
    expect(streamed.join('')).toBe('at /mnt/w\nnow /mnt/w');
  });

  it('stops decoding and rewriting for listeners once listenUntil is aborted', async () => {
    let rewritten = 0;
    const { launcher, started } = printer((text) => {
      rewritten += text.length;
      return mask(text);
    });
    const table = tableOf(launcher);
    const streamed: string[] = [];
    const done = new AbortController();
    const handle = await table.start('server', {
      onStdout: (t) => streamed.push(t),
      listenUntil: done.signal,
    });
    const sink = started[0]!.sink;
    sink.stdout(Buffer.from('ready at /host/dir\n'));
    expect(streamed.join('')).toBe('ready at /mnt/w\n');
    const before = rewritten;
    // The call that listened has returned; the process runs on and floods.
    done.abort();
    for (let i = 0; i < 100; i++) sink.stdout(Buffer.from('tick /host/dir\n'));
    expect(rewritten).toBe(before);
    expect(streamed.join('')).toBe('ready at /mnt/w\n');
    // What it printed is still kept, and rewritten when read.
    expect((await handle.output()).text).toContain('tick /mnt/w');
    started[0]!.exit.resolve({ exitCode: 0 });
    await handle.wait();
  });

  it('a long-lived listenUntil signal keeps no listener of a process that ended or failed to launch', async () => {
    const { launcher, started } = printer();
    const table = tableOf(launcher);
    const session = new AbortController();
    for (let i = 0; i < 20; i++) {
      const handle = await table.start('short', {
        onStdout: () => undefined,
        listenUntil: session.signal,
      });
      started[i]!.exit.resolve({ exitCode: 0 });
      await handle.wait();
    }
    const failing = new ProcessTable({
      launcher: {
        launch: async () => {
          throw new Error('no such backend');
        },
      },
      stdin: false,
      clock: new ManualClock(),
    });
    await expect(
      failing.start('x', { onStdout: () => undefined, listenUntil: session.signal }),
    ).rejects.toThrow('no such backend');
    expect(getEventListeners(session.signal, 'abort')).toHaveLength(0);
    await table.close();
  });

  it('once listenUntil is aborted, output a backend pushes no longer spends the shared credit', async () => {
    const queued: (() => void)[] = [];
    const pacer = new OutputPacer({
      bytesPerTurn: 1024,
      later: (callback) => queued.push(callback),
    });
    const { launcher, started } = printer();
    const table = new ProcessTable({ launcher, stdin: false, clock: new ManualClock(), pacer });
    const done = new AbortController();
    const handle = await table.start('server', {
      onStdout: () => undefined,
      listenUntil: done.signal,
    });
    done.abort();
    started[0]!.sink.stdout(Buffer.alloc(4096, 'x'));
    // Another tenant's listener on the same pacer still has this turn's credit.
    const seen: string[] = [];
    const neighbour = new PacedListener(
      { write: (chunk) => seen.push(String(chunk)), end: () => undefined },
      { pacer },
    );
    neighbour.write('n');
    expect(seen).toEqual(['n']);
    expect((await handle.output()).text).toHaveLength(4096);
    started[0]!.exit.resolve({ exitCode: 0 });
    await handle.wait();
    await table.close();
  });
});
