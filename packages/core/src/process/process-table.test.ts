import { describe, expect, it } from 'vitest';
import { ProcessNotFoundError, ProcessStateError } from '../errors/process-errors.js';
import { ManualClock } from '../testing/manual-clock.js';
import { recordingLogger } from '../testing/recording-logger.js';
import { rejectionOf } from '../testing/rejection.js';
import type { LaunchedExit, ProcessLauncher, ProcessSink } from './process-launcher.js';
import { ProcessTable } from './process-table.js';

/** A launcher whose processes end when the test says so. */
class ScriptedLauncher implements ProcessLauncher {
  readonly started: {
    command: string;
    sink: ProcessSink;
    end: (exit: LaunchedExit) => void;
    kills: string[];
    input: string[];
    stdinClosed: boolean;
  }[] = [];

  async launch(command: string, _options: unknown, sink: ProcessSink) {
    let end!: (exit: LaunchedExit) => void;
    const exited = new Promise<LaunchedExit>((resolve) => (end = resolve));
    const entry = {
      command,
      sink,
      end,
      kills: [] as string[],
      input: [] as string[],
      stdinClosed: false,
    };
    this.started.push(entry);
    return {
      exited,
      kill: async (signal: string) => {
        entry.kills.push(signal);
        end({ exitCode: null, signal });
      },
      write: async (input: string | Uint8Array) => {
        entry.input.push(typeof input === 'string' ? input : Buffer.from(input).toString());
      },
      closeStdin: async () => {
        entry.stdinClosed = true;
      },
    };
  }
}

function table(options: Partial<ConstructorParameters<typeof ProcessTable>[0]> = {}) {
  const launcher = new ScriptedLauncher();
  const clock = new ManualClock();
  const t = new ProcessTable({ launcher, stdin: true, clock, ...options });
  return { t, launcher, clock };
}

describe('ProcessTable', () => {
  it('gives ids, keeps output, reports the end', async () => {
    const { t, launcher } = table();
    const seen: string[] = [];
    const handle = await t.start('server', { onStdout: (c) => seen.push(c) });
    expect(handle.id).toBe('p1');
    const proc = launcher.started[0]!;
    proc.sink.stdout(Buffer.from('hello '));
    proc.sink.stdout('world\n');
    expect(seen.join('')).toBe('hello world\n');
    expect((await handle.output()).text).toBe('hello world\n');
    proc.end({ exitCode: 0 });
    expect(await handle.wait()).toEqual({ exitCode: 0, timedOut: false });
    expect(handle.info()).toMatchObject({ status: 'exited', exitCode: 0 });
    expect((await t.list()).map((p) => p.id)).toEqual(['p1']);
  });

  it('never splits a UTF-8 character between two listener calls', async () => {
    const { t, launcher } = table();
    const seen: string[] = [];
    await t.start('x', { onStdout: (c) => seen.push(c) });
    const bytes = Buffer.from('é', 'utf8');
    launcher.started[0]!.sink.stdout(bytes.subarray(0, 1));
    launcher.started[0]!.sink.stdout(bytes.subarray(1));
    expect(seen).toEqual(['é']);
  });

  it('kills at its own time limit and reports timedOut', async () => {
    const { t, launcher, clock } = table();
    const handle = await t.start('sleep', { timeoutMs: 1000 });
    await clock.advance(999);
    expect(launcher.started[0]!.kills).toEqual([]);
    await clock.advance(1);
    expect(launcher.started[0]!.kills).toEqual(['SIGKILL']);
    expect(await handle.wait()).toMatchObject({ timedOut: true, signal: 'SIGKILL' });
  });

  it('refuses a start over the running limit, and again after close', async () => {
    const { t } = table({ maxRunning: 1 });
    await t.start('one');
    expect(ProcessStateError.is(await rejectionOf(t.start('two')))).toBe(true);
    await t.close();
    expect(ProcessStateError.is(await rejectionOf(t.start('three')))).toBe(true);
  });

  it('close kills what runs and waits for the ends', async () => {
    const { t, launcher } = table();
    const a = await t.start('a');
    await t.close();
    expect(launcher.started[0]!.kills).toEqual(['SIGKILL']);
    expect(a.info().status).toBe('exited');
  });

  it('forgets the oldest ended processes beyond keepEnded', async () => {
    const { t, launcher } = table({ keepEnded: 2 });
    for (let i = 0; i < 3; i++) {
      const h = await t.start(`c${i}`);
      launcher.started[i]!.end({ exitCode: i });
      await h.wait();
    }
    expect((await t.list()).map((p) => p.id)).toEqual(['p2', 'p3']);
    expect(await t.get('p1')).toBeUndefined();
    expect(ProcessNotFoundError.is(await rejectionOf(t.require('p1')))).toBe(true);
  });

  it('writes input, refuses it once closed or ended, and bounds one write', async () => {
    const { t, launcher } = table();
    const h = await t.start('cat');
    await h.write('abc');
    expect(launcher.started[0]!.input).toEqual(['abc']);
    expect(await rejectionOf(h.write('x'.repeat(1024 * 1024 + 1)))).toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    await h.closeStdin();
    expect(launcher.started[0]!.stdinClosed).toBe(true);
    expect(ProcessStateError.is(await rejectionOf(h.write('late')))).toBe(true);
  });

  it('refuses input when the launcher takes none', async () => {
    const { t } = table({ stdin: false });
    const h = await t.start('cat');
    expect(await rejectionOf(h.write('x'))).toMatchObject({ code: 'CAPABILITY_NOT_SUPPORTED' });
  });

  it('refuses bad signals, commands and limits with typed errors', async () => {
    const { t } = table();
    expect(await rejectionOf(t.start(''))).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(await rejectionOf(t.start('x', { timeoutMs: -1 }))).toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    const h = await t.start('x');
    expect(await rejectionOf(h.kill('SIGSTOP' as never))).toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
  });

  it('a throwing listener is logged once and cannot stop the output being kept', async () => {
    const logger = recordingLogger();
    const { t, launcher } = table({ logger });
    const h = await t.start('x', {
      onStdout: () => {
        throw new Error('listener bug');
      },
    });
    launcher.started[0]!.sink.stdout('one');
    launcher.started[0]!.sink.stdout('two');
    expect((await h.output()).text).toBe('onetwo');
    expect(logger.lines.filter((r) => r.level === 'warn')).toHaveLength(1);
  });

  it('wait with a limit resolves undefined while the process runs', async () => {
    const { t, clock } = table();
    const h = await t.start('x');
    const waiting = h.wait({ timeoutMs: 100 });
    await clock.advance(100);
    expect(await waiting).toBeUndefined();
  });

  it('killRunning ends what runs and keeps the table open for new processes', async () => {
    const { t, launcher } = table();
    const running = await t.start('server');
    await t.killRunning();
    expect(launcher.started[0]!.kills).toEqual(['SIGKILL']);
    expect(running.info().status).toBe('exited');
    const next = await t.start('next');
    expect(next.info().status).toBe('running');
    expect(t.closed).toBe(false);
  });

  it('counts launches in flight against the running limit (concurrent starts cannot all pass)', async () => {
    const launcher = new ScriptedLauncher();
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const gated: ProcessLauncher = {
      launch: async (...args) => {
        await gate;
        return launcher.launch(...args);
      },
    };
    const t = new ProcessTable({
      launcher: gated,
      stdin: true,
      clock: new ManualClock(),
      maxRunning: 2,
    });
    const starts = [t.start('a'), t.start('b'), t.start('c')];
    const third = await rejectionOf(starts[2]!);
    expect(third).toBeInstanceOf(ProcessStateError);
    open();
    await Promise.all(starts.slice(0, 2));
    expect((await t.list()).map((p) => p.command)).toEqual(['a', 'b']);
    // A launch that failed gives its place back.
    const failing = new ProcessTable({
      launcher: { launch: async () => Promise.reject(new Error('no')) },
      stdin: true,
      maxRunning: 1,
    });
    await rejectionOf(failing.start('x'));
    expect(await rejectionOf(failing.start('y'))).toMatchObject({ message: 'no' });
  });
});
