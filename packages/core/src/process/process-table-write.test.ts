import { describe, expect, it } from 'vitest';
import { ProcessInputBlockedError } from '../errors/process-errors.js';
import { Deferred } from '../testing/deferred.js';
import { ManualClock } from '../testing/manual-clock.js';
import { recordingLogger } from '../testing/recording-logger.js';
import type { InputWriteOptions, LaunchedExit, ProcessLauncher } from './process-launcher.js';
import { DEFAULT_PROCESS_WRITE_TIMEOUT_MS } from './process-input.js';
import { ProcessTable } from './process-table.js';

/**
 * A process whose input pipe takes `room` bytes and which never reads: a write of more never
 * completes, as on a host pipe.
 */
function nonReader(room: number) {
  const writes: { signal: AbortSignal | undefined; settled: Deferred }[] = [];
  let taken = 0;
  const launcher: ProcessLauncher = {
    launch: async () => ({
      exited: new Deferred<LaunchedExit>().promise,
      kill: async () => {},
      write: async (input: string | Uint8Array, options: InputWriteOptions = {}) => {
        const size = typeof input === 'string' ? Buffer.byteLength(input) : input.length;
        const fits = Math.min(size, room - taken);
        taken += fits;
        options.onAccepted?.(fits);
        const settled = new Deferred();
        writes.push({ signal: options.signal, settled });
        if (fits === size) settled.resolve();
        await settled.promise;
      },
    }),
  };
  return { launcher, writes };
}

function tableOf(launcher: ProcessLauncher) {
  const clock = new ManualClock();
  const logger = recordingLogger();
  return { table: new ProcessTable({ launcher, stdin: true, clock, logger }), clock, logger };
}

describe('ProcessTable: a write to a process that does not read its input', () => {
  it('fails typed at its time limit, says how much was taken, and tells the backend to stop', async () => {
    const { launcher, writes } = nonReader(65_536);
    const { table, clock } = tableOf(launcher);
    const handle = await table.start('sleep 1000');
    await handle.write('x'.repeat(1_000));
    const blocked = handle.write('y'.repeat(100_000), { timeoutMs: 500 }).catch((e: unknown) => e);
    await clock.advance(499);
    expect(writes[1]!.signal?.aborted).toBe(false);
    await clock.advance(1);
    const error = await blocked;
    expect(error).toBeInstanceOf(ProcessInputBlockedError);
    expect(error).toMatchObject({
      code: 'PROCESS_INPUT_BLOCKED',
      acceptedBytes: 64_536,
      totalBytes: 100_000,
      timeoutMs: 500,
    });
    expect((error as Error).message).toContain('64536 of 100000 bytes were accepted');
    expect(writes[1]!.signal?.aborted).toBe(true);
    expect(clock.pendingTimers).toBe(0);
  });

  it('without a limit from the caller, waits the default and no longer', async () => {
    const { launcher } = nonReader(0);
    const { table, clock } = tableOf(launcher);
    const handle = await table.start('sleep 1000');
    const blocked = handle.write('z').catch((e: unknown) => e);
    await clock.advance(DEFAULT_PROCESS_WRITE_TIMEOUT_MS);
    expect(await blocked).toMatchObject({ code: 'PROCESS_INPUT_BLOCKED', acceptedBytes: 0 });
  });

  it('a write that completes in time clears its timer; a late failure of a given-up write is logged', async () => {
    const { launcher, writes } = nonReader(10);
    const { table, clock, logger } = tableOf(launcher);
    const handle = await table.start('cat');
    await handle.write('0123456789', { timeoutMs: 100 });
    expect(clock.pendingTimers).toBe(0);
    const blocked = handle.write('more', { timeoutMs: 100 }).catch((e: unknown) => e);
    await clock.advance(100);
    expect(await blocked).toBeInstanceOf(ProcessInputBlockedError);
    writes[1]!.settled.reject(new Error('EPIPE'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(logger.text('warn')).toContain('a blocked write to a process input failed later');
  });

  it('refuses a limit that is not a positive number', async () => {
    const { launcher } = nonReader(10);
    const { table } = tableOf(launcher);
    const handle = await table.start('cat');
    await expect(handle.write('a', { timeoutMs: -1 })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
  });
});
