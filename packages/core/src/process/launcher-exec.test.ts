import { describe, expect, it } from 'vitest';
import { AbortedError } from '../errors/errors.js';
import { ManualClock } from '../testing/manual-clock.js';
import { recordingLogger } from '../testing/recording-logger.js';
import { rejectionOf } from '../testing/rejection.js';
import { KILLED_COMMAND_GRACE_MS, execViaLauncher } from './launcher-exec.js';
import type { LaunchOptions, LaunchedExit, ProcessLauncher } from './process-launcher.js';

/** A backend whose commands end only when the test says so; `deaf` ones ignore kills too. */
function backend(options: { deaf?: boolean } = {}) {
  const launches: LaunchOptions[] = [];
  const kills: string[] = [];
  let killed!: (signal: string) => void;
  const firstKill = new Promise<string>((resolve) => (killed = resolve));
  let end!: (exit: LaunchedExit) => void;
  const launcher: ProcessLauncher = {
    launch: async (_command, launchOptions, sink) => {
      launches.push(launchOptions);
      sink.stdout('partial\n');
      const exited = new Promise<LaunchedExit>((resolve) => (end = resolve));
      return {
        exited,
        kill: async (signal) => {
          kills.push(signal);
          killed(signal);
          if (!options.deaf) end({ exitCode: null, signal });
        },
      };
    },
  };
  return { launcher, launches, kills, firstKill, end: (exit: LaunchedExit) => end(exit) };
}

describe('execViaLauncher', () => {
  it('hands its limit to the backend as a backstop and kills at it', async () => {
    const clock = new ManualClock();
    const { launcher, launches, kills } = backend();
    const pending = execViaLauncher(launcher, 'sleep 60', {}, { timeoutMs: 1_000, clock });
    await clock.advance(0); // the launch resolves and the limit's timer is set
    await clock.advance(1_000);
    const result = await pending;
    expect(launches[0]).toEqual({ timeoutMs: 1_000 });
    expect(kills).toEqual(['SIGKILL']);
    expect(result).toMatchObject({ timedOut: true, exitCode: null, stdout: 'partial\n' });
    // The grace timer of the kill goes with the call.
    expect(clock.pendingTimers).toBe(0);
  });

  it('stops waiting for a killed command that never reports its end, and says so', async () => {
    const clock = new ManualClock();
    const logger = recordingLogger();
    const { launcher } = backend({ deaf: true });
    let settled = false;
    const pending = execViaLauncher(launcher, 'x', {}, { timeoutMs: 1_000, clock, logger });
    void pending.then(() => (settled = true));
    await clock.advance(0);
    await clock.advance(1_000);
    await clock.advance(KILLED_COMMAND_GRACE_MS - 1);
    expect(settled).toBe(false);
    await clock.advance(1);
    expect(await pending).toMatchObject({ timedOut: true, exitCode: null, stdout: 'partial\n' });
    expect(logger.text('warn')).toContain('a killed command did not report its end');
  });

  it('an abort of a command that ignores the kill still rejects after the grace', async () => {
    const clock = new ManualClock();
    const { launcher } = backend({ deaf: true });
    const controller = new AbortController();
    const pending = execViaLauncher(
      launcher,
      'x',
      { signal: controller.signal },
      { timeoutMs: undefined, clock },
    );
    const rejected = rejectionOf(pending);
    await clock.advance(0);
    controller.abort();
    await clock.advance(KILLED_COMMAND_GRACE_MS);
    expect(await rejected).toBeInstanceOf(AbortedError);
  });

  it('without a limit, waits as long as the command runs and reports no limit', async () => {
    const clock = new ManualClock();
    const { launcher, launches, kills, end } = backend();
    const pending = execViaLauncher(launcher, 'x', {}, { timeoutMs: undefined, clock });
    await clock.advance(24 * 3600_000);
    end({ exitCode: 0 });
    const result = await pending;
    expect(launches[0]).toEqual({});
    expect(kills).toEqual([]);
    expect(result).toMatchObject({ exitCode: 0, timedOut: false });
    expect(result).not.toHaveProperty('timeoutMs');
  });

  it('an abort while the backend is still starting the command rejects at once; the command is killed when it starts', async () => {
    const clock = new ManualClock();
    const { launcher, firstKill } = backend();
    let start!: () => void;
    const gated: ProcessLauncher = {
      launch: async (...args) => {
        await new Promise<void>((resolve) => (start = resolve));
        return launcher.launch(...args);
      },
    };
    const controller = new AbortController();
    const pending = execViaLauncher(
      gated,
      'x',
      { signal: controller.signal },
      { timeoutMs: 60_000, clock },
    );
    const rejected = rejectionOf(pending);
    controller.abort();
    expect(await rejected).toBeInstanceOf(AbortedError);
    start();
    expect(await firstKill).toBe('SIGKILL');
  });

  it('a backend that never starts the command gives up at the limit plus the grace', async () => {
    const clock = new ManualClock();
    const logger = recordingLogger();
    const never: ProcessLauncher = { launch: () => new Promise(() => {}) };
    const pending = execViaLauncher(never, 'x', {}, { timeoutMs: 1_000, clock, logger });
    await clock.advance(1_000 + KILLED_COMMAND_GRACE_MS);
    expect(await pending).toMatchObject({ timedOut: true, exitCode: null, stdout: '' });
    expect(logger.text('warn')).toContain('did not start before its limit');
  });

  it('an already aborted call rejects without starting anything', async () => {
    const { launcher, launches } = backend();
    const controller = new AbortController();
    controller.abort();
    const error = await rejectionOf(
      execViaLauncher(launcher, 'x', { signal: controller.signal }, { timeoutMs: undefined }),
    );
    expect(error).toBeInstanceOf(AbortedError);
    expect(launches).toEqual([]);
  });

  it('a command that ends before its limit leaves no timer; an abort after the end signals nothing', async () => {
    const clock = new ManualClock();
    const { launcher, kills, end } = backend();
    const controller = new AbortController();
    const pending = execViaLauncher(
      launcher,
      'x',
      { signal: controller.signal },
      { timeoutMs: 60_000, clock },
    );
    await clock.advance(0);
    end({ exitCode: 0 });
    expect(await pending).toMatchObject({ exitCode: 0, timedOut: false });
    expect(clock.pendingTimers).toBe(0);
    controller.abort();
    expect(kills).toEqual([]);
  });

  it('a command the backend starts only after its limit is killed as it starts', async () => {
    const clock = new ManualClock();
    const { launcher, kills } = backend();
    let start!: () => void;
    const late: ProcessLauncher = {
      launch: async (...args) => {
        await new Promise<void>((resolve) => (start = resolve));
        return launcher.launch(...args);
      },
    };
    const pending = execViaLauncher(late, 'x', {}, { timeoutMs: 1_000, clock });
    await clock.advance(1_000);
    start();
    const result = await pending;
    expect(kills).toEqual(['SIGKILL']);
    expect(result).toMatchObject({ timedOut: true, exitCode: null });
  });

  it('an abort after the limit killed a deaf command sends no second kill', async () => {
    const clock = new ManualClock();
    const { launcher, kills } = backend({ deaf: true });
    const controller = new AbortController();
    const pending = execViaLauncher(
      launcher,
      'x',
      { signal: controller.signal },
      { timeoutMs: 1_000, clock },
    );
    const rejected = rejectionOf(pending);
    await clock.advance(0);
    await clock.advance(1_000);
    controller.abort();
    await clock.advance(KILLED_COMMAND_GRACE_MS);
    expect(await rejected).toBeInstanceOf(AbortedError);
    expect(kills).toEqual(['SIGKILL']);
    expect(clock.pendingTimers).toBe(0);
  });

  it('a command whose input cannot be given is killed, and the call fails', async () => {
    const kills: string[] = [];
    const launcher: ProcessLauncher = {
      launch: async () => ({
        exited: new Promise<LaunchedExit>(() => {}),
        kill: async (signal) => {
          kills.push(signal);
        },
        write: async () => {
          throw new Error('broken pipe');
        },
      }),
    };
    const error = await rejectionOf(
      execViaLauncher(launcher, 'cat', { stdin: 'x' }, { timeoutMs: undefined }),
    );
    expect(error).toMatchObject({ message: 'broken pipe' });
    expect(kills).toEqual(['SIGKILL']);
  });
});
