import { describe, expect, it } from 'vitest';
import { ProcessStateError } from '../errors/process-errors.js';
import { Deferred } from '../testing/deferred.js';
import { ManualClock } from '../testing/manual-clock.js';
import { recordingLogger } from '../testing/recording-logger.js';
import { rejectionOf } from '../testing/rejection.js';
import type {
  AttachedProcess,
  LaunchedExit,
  LaunchedProcess,
  ProcessLauncher,
  ProcessSink,
} from './process-launcher.js';
import { ProcessTable } from './process-table.js';

/** One process the test controls: it ends when told, and records what it was sent. */
class Controlled {
  readonly exit = new Deferred<LaunchedExit>();
  readonly kills: string[] = [];
  detached = false;
  sink: ProcessSink | undefined;
  /** When set, a kill is recorded but does not end the process (a backend that never answers). */
  ignoresKill = false;
  /** When set, a kill rejects with it. */
  killFails: Error | undefined;
  /** With `killFails`: the process ends on its own just before the kill fails (it was gone). */
  endsOnFailedKill = false;

  launched(id?: string): LaunchedProcess {
    return {
      ...(id !== undefined ? { id } : {}),
      exited: this.exit.promise,
      kill: async (signal) => {
        this.kills.push(signal);
        if (this.killFails) {
          if (this.endsOnFailedKill) {
            this.exit.resolve({ exitCode: 1 });
            await new Promise((resolve) => setImmediate(resolve));
          }
          throw this.killFails;
        }
        if (!this.ignoresKill) this.exit.resolve({ exitCode: null, signal });
      },
    };
  }

  attached(id: string, command: string): AttachedProcess {
    return {
      ...this.launched(id),
      id,
      command,
      detach: async () => {
        this.detached = true;
      },
    };
  }
}

/** Lets every pending promise reaction run. */
function settled(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function tableOf(launcher: ProcessLauncher, options: { maxRunning?: number } = {}) {
  const clock = new ManualClock();
  const logger = recordingLogger();
  const table = new ProcessTable({ launcher, stdin: false, clock, logger, ...options });
  return { table, clock, logger };
}

describe('ProcessTable lifecycle guards', () => {
  it('a start that lands just as a launch gives its place back still counts that launch (no room for one more)', async () => {
    // The launch resolves; a caller reacting to that same moment starts another process. The
    // finished launch must be running in the count by then, or the limit is exceeded by one.
    const first = new Controlled();
    const landed = new Deferred<LaunchedProcess>();
    const second = new Controlled();
    const launches = [() => landed.promise, async () => second.launched()];
    const { table } = tableOf({ launch: () => launches.shift()!() }, { maxRunning: 1 });
    const starting = table.start('first');
    // The launch is under way (the table awaits it) before this reaction is registered.
    await settled();
    let racing: Promise<unknown> | undefined;
    void landed.promise.then(() => {
      racing = table.start('second').catch((error: unknown) => error);
    });
    landed.resolve(first.launched());
    await starting;
    expect(await racing).toBeInstanceOf(ProcessStateError);
    expect((await table.list()).map((p) => p.command)).toEqual(['first']);
  });

  it('an attach that lands the same way counts too', async () => {
    const running = new Controlled();
    const landed = new Deferred<AttachedProcess | undefined>();
    const other = new Controlled();
    const { table } = tableOf(
      {
        launch: async () => other.launched(),
        attach: () => landed.promise,
      },
      { maxRunning: 1 },
    );
    const attaching = table.get('p1');
    await settled();
    let racing: Promise<unknown> | undefined;
    void landed.promise.then(() => {
      racing = table.start('mine').catch((error: unknown) => error);
    });
    landed.resolve(running.attached('p1', 'theirs'));
    expect((await attaching)?.command).toBe('theirs');
    expect(await racing).toBeInstanceOf(ProcessStateError);
  });

  it('the time limit is cleared when the process ends: it is not reported as timed out later', async () => {
    const proc = new Controlled();
    const { table, clock } = tableOf({ launch: async () => proc.launched() });
    const handle = await table.start('quick', { timeoutMs: 1_000 });
    proc.exit.resolve({ exitCode: 0 });
    expect(await handle.wait()).toEqual({ exitCode: 0, timedOut: false });
    await clock.advance(5_000);
    expect(handle.info().timedOut).toBe(false);
    expect(clock.pendingTimers).toBe(0);
    expect(proc.kills).toEqual([]);
  });

  it('sends no signal to a process that has ended (its pid may be another process by now)', async () => {
    const proc = new Controlled();
    const { table } = tableOf({ launch: async () => proc.launched() });
    const handle = await table.start('done');
    proc.exit.resolve({ exitCode: 0 });
    await handle.wait();
    await handle.kill('SIGKILL');
    await table.close();
    expect(proc.kills).toEqual([]);
  });

  it('a failed kill reaches the caller while the process runs, and not when it ended meanwhile', async () => {
    const proc = new Controlled();
    proc.killFails = new Error('backend refused');
    const { table, logger } = tableOf({ launch: async () => proc.launched() });
    const handle = await table.start('x');
    expect(await rejectionOf(handle.kill('SIGTERM'))).toMatchObject({
      message: 'backend refused',
    });
    expect(logger.text('warn')).toContain('killing a background process failed');

    const gone = new Controlled();
    gone.killFails = new Error('no such process');
    gone.endsOnFailedKill = true;
    const { table: other } = tableOf({ launch: async () => gone.launched() });
    const ending = await other.start('y');
    await ending.kill('SIGTERM');
    expect(gone.kills).toEqual(['SIGTERM']);
  });

  it('a start whose launch is in flight when the client closes is killed once it lands', async () => {
    const proc = new Controlled();
    const landed = new Deferred<LaunchedProcess>();
    const { table } = tableOf({ launch: () => landed.promise });
    const starting = table.start('late');
    // close() waits for the launch (bounded) so the kill is sent while the client is still open.
    const closing = table.close();
    landed.resolve(proc.launched());
    const handle = await starting;
    await closing;
    expect(proc.kills).toEqual(['SIGKILL']);
    expect(await handle.wait()).toMatchObject({ signal: 'SIGKILL' });
  });

  it('close waits a bounded time for a killed process that never reports its end, and says so', async () => {
    const proc = new Controlled();
    proc.ignoresKill = true;
    const { table, clock, logger } = tableOf({ launch: async () => proc.launched() });
    await table.start('stuck');
    let closed = false;
    const closing = table.close().then(() => (closed = true));
    await settled();
    expect(proc.kills).toEqual(['SIGKILL']);
    await clock.advance(4_999);
    await settled();
    expect(closed).toBe(false);
    await clock.advance(1);
    await closing;
    expect(proc.kills).toEqual(['SIGKILL']);
    expect(logger.text('warn')).toContain('did not report their end after a kill');
    expect(clock.pendingTimers).toBe(0);
  });
});

describe('ProcessTable: input, waits and ids', () => {
  it('closes a process input once, and not after the process ended', async () => {
    const closes: string[] = [];
    const exit = new Deferred<LaunchedExit>();
    const launcher: ProcessLauncher = {
      launch: async () => ({
        exited: exit.promise,
        kill: async () => {},
        closeStdin: async () => {
          closes.push('close');
        },
      }),
    };
    const table = new ProcessTable({ launcher, stdin: true, clock: new ManualClock() });
    const first = await table.start('cat');
    await first.closeStdin();
    await first.closeStdin();
    expect(closes).toEqual(['close']);
    const second = await table.start('cat');
    exit.resolve({ exitCode: 0 });
    await second.wait();
    await second.closeStdin();
    expect(closes).toEqual(['close']);
  });

  it('refuses input to a process that has ended', async () => {
    const exit = new Deferred<LaunchedExit>();
    const written: string[] = [];
    const table = new ProcessTable({
      launcher: {
        launch: async () => ({
          exited: exit.promise,
          kill: async () => {},
          write: async (input) => {
            written.push(String(input));
          },
        }),
      },
      stdin: true,
      clock: new ManualClock(),
    });
    const handle = await table.start('cat');
    exit.resolve({ exitCode: 0 });
    await handle.wait();
    await expect(handle.write('late')).rejects.toMatchObject({ code: 'PROCESS_STATE' });
    expect(written).toEqual([]);
  });

  it('a wait with a limit leaves no timer behind when the process ends first', async () => {
    const proc = new Controlled();
    const { table, clock } = tableOf({ launch: async () => proc.launched() });
    const handle = await table.start('x');
    const waiting = handle.wait({ timeoutMs: 10_000 });
    proc.exit.resolve({ exitCode: 0 });
    expect(await waiting).toMatchObject({ exitCode: 0 });
    expect(clock.pendingTimers).toBe(0);
  });

  it('a launcher handing out the id of a running process again is logged as the bug it is', async () => {
    const { table, logger } = tableOf({ launch: async () => new Controlled().launched('p7') });
    await table.start('one');
    await table.start('two');
    expect(logger.text('error')).toContain('reused the id of a running process');
  });
});

describe('ProcessTable: a closed client', () => {
  it('asks the backend for nothing when listing', async () => {
    let discovered = 0;
    const { table } = tableOf({
      launch: async () => new Controlled().launched(),
      attach: async () => undefined,
      discover: async () => {
        discovered += 1;
        return ['p1'];
      },
    });
    await table.list();
    expect(discovered).toBe(1);
    await table.close();
    expect(await table.list()).toEqual([]);
    expect(discovered).toBe(1);
  });
});

describe('ProcessTable: how a process is listed', () => {
  it('shows the label its caller gave (the command its user wrote), and refuses an oversized one', async () => {
    const { table } = tableOf({ launch: async () => new Controlled().launched() });
    const handle = await table.start("cd '/host/w' && make", { label: 'make' });
    expect(handle.command).toBe('make');
    expect(handle.info().command).toBe('make');
    expect((await table.list()).map((p) => p.command)).toEqual(['make']);
    await expect(table.start('x', { label: 'y'.repeat(300 * 1024) })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
  });
});

describe('ProcessTable: what closing does to processes another client started', () => {
  it('close lets go of a process it only attached (another client runs it) and kills its own', async () => {
    const theirs = new Controlled();
    const mine = new Controlled();
    const { table, clock } = tableOf({
      launch: async () => mine.launched('p2'),
      attach: async (id) => (id === 'p1' ? theirs.attached('p1', 'their server') : undefined),
    });
    const attached = await table.get('p1');
    expect(attached?.command).toBe('their server');
    await table.start('my build');
    await table.close();
    expect(mine.kills).toEqual(['SIGKILL']);
    expect(theirs.kills).toEqual([]);
    expect(theirs.detached).toBe(true);
    // It is no longer followed from here: not listed as running, and not attached again.
    expect((await table.list()).map((p) => p.id)).toEqual(['p2']);
    expect(clock.pendingTimers).toBe(0);
  });

  it('the end of a process it let go of takes no place among the ended ones it remembers', async () => {
    const theirs = new Controlled();
    const mine = new Controlled();
    const clock = new ManualClock();
    const table = new ProcessTable({
      launcher: {
        launch: async () => mine.launched('p2'),
        attach: async (id) => theirs.attached(id, 'theirs'),
      },
      stdin: false,
      clock,
      keepEnded: 1,
    });
    await table.get('p1');
    const own = await table.start('mine');
    mine.exit.resolve({ exitCode: 0 });
    await own.wait();
    await table.killRunning();
    // The other client's process ends later; this client no longer follows it.
    theirs.exit.resolve({ exitCode: 0 });
    await settled();
    expect((await table.list()).map((p) => p.id)).toEqual(['p2']);
  });

  it('an attach that lands after close is let go: not killed, not kept', async () => {
    const theirs = new Controlled();
    const landed = new Deferred<AttachedProcess | undefined>();
    const { table } = tableOf({
      launch: async () => new Controlled().launched(),
      attach: () => landed.promise,
    });
    const attaching = table.get('p9');
    await table.close();
    landed.resolve(theirs.attached('p9', 'theirs'));
    expect(await attaching).toBeUndefined();
    expect(theirs.kills).toEqual([]);
    expect(theirs.detached).toBe(true);
    expect(await table.list()).toEqual([]);
  });

  it('killRunning (a release that keeps the client) lets go of attached processes the same way', async () => {
    const theirs = new Controlled();
    const { table } = tableOf({
      launch: async () => new Controlled().launched(),
      attach: async (id) => theirs.attached(id, 'theirs'),
    });
    await table.get('p5');
    await table.killRunning();
    expect(theirs.kills).toEqual([]);
    expect(theirs.detached).toBe(true);
    // Still open: the process can be reached again.
    expect((await table.get('p5'))?.id).toBe('p5');
  });
});
