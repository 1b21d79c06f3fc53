import { describe, expect, it } from 'vitest';
import { Deferred, settle, track } from '../testing/deferred.js';
import { ManualClock } from '../testing/manual-clock.js';
import type { LaunchedExit, LaunchedProcess, ProcessLauncher } from './process-launcher.js';
import { ProcessTable } from './process-table.js';

/** A process whose launch the test lets land, and which ends when killed. */
function controlledLaunch() {
  const launch = new Deferred<LaunchedProcess>();
  const exit = new Deferred<LaunchedExit>();
  const kills: string[] = [];
  const process: LaunchedProcess = {
    exited: exit.promise,
    kill: async (signal) => {
      kills.push(signal);
      exit.resolve({ exitCode: null, signal });
    },
  };
  return { launch, process, kills };
}

describe('ProcessTable: a launch in flight when the turn ends', () => {
  it('killRunning waits for a launch still in flight and kills its process as it lands', async () => {
    const first = controlledLaunch();
    const launcher: ProcessLauncher = { launch: () => first.launch.promise };
    const table = new ProcessTable({ launcher, stdin: false, clock: new ManualClock() });
    const starting = table.start('sleep 300');
    await settle();
    const ending = track(table.killRunning());
    await settle();
    expect(ending.settled).toBe(false);
    first.launch.resolve(first.process);
    const handle = await starting;
    await ending.promise;
    expect(first.kills).toEqual(['SIGKILL']);
    expect(handle.info().status).toBe('exited');
    expect(table.closed).toBe(false);
  });

  it('a launch begun after killRunning belongs to the next turn and is left running', async () => {
    const next = controlledLaunch();
    next.launch.resolve(next.process);
    const table = new ProcessTable({
      launcher: { launch: () => next.launch.promise },
      stdin: false,
      clock: new ManualClock(),
    });
    await table.killRunning();
    const handle = await table.start('sleep 300');
    expect(next.kills).toEqual([]);
    expect(handle.info().status).toBe('running');
  });

  it('a launch that fails while killRunning waits for it does not hold the turn end up', async () => {
    const failing = new Deferred<LaunchedProcess>();
    const table = new ProcessTable({
      launcher: { launch: () => failing.promise },
      stdin: false,
      clock: new ManualClock(),
    });
    const starting = table.start('nope').catch((error: unknown) => error);
    await settle();
    const ending = table.killRunning();
    failing.reject(new Error('no shell'));
    expect(await starting).toBeInstanceOf(Error);
    await ending;
  });
});
