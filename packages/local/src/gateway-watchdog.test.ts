import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { recordingLogger } from '@sbx/core/testing';
import { GATEWAY_WATCHDOG_SCRIPT } from './gateway-watchdog-script.js';
import { GatewayWatchdog } from './gateway-watchdog.js';
import { PROVIDER_PROCESS_MARKER } from './process-reaper.js';
import {
  hasProcFs,
  killSurvivors,
  liveStartTime,
  survivorsAfter,
  type ProcessIdentity,
} from './proc-test-support.js';

/** A `sleep` leading a session of its own, as every command's shell does. */
async function sessionLeader(name: string, env: NodeJS.ProcessEnv = {}): Promise<ProcessIdentity> {
  const child = spawn('sleep', ['300'], { detached: true, stdio: 'ignore', env });
  child.unref();
  const pid = child.pid!;
  return { name, pid, start: (await liveStartTime(pid))! };
}

/** The watchdog program with this test as its gateway; resolves once it has exited. */
function runScript(marker: string, lines: readonly string[]): Promise<number | null> {
  const child: ChildProcess = spawn(
    process.execPath,
    ['-e', GATEWAY_WATCHDOG_SCRIPT, marker, String(process.pid)],
    { stdio: ['pipe', 'ignore', 'inherit'], env: {} },
  );
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  child.stdin!.end(lines.map((l) => `${l}\n`).join(''));
  return exited;
}

describe.runIf(hasProcFs)('the gateway watchdog', () => {
  let started: ProcessIdentity[] = [];
  afterEach(async () => {
    await killSurvivors(started);
    started = [];
  });

  it('at the end of its input kills the sessions it was told about and the tagged processes', async () => {
    const marker = `${PROVIDER_PROCESS_MARKER}=${randomUUID()}`;
    const session = await sessionLeader('session');
    const tagged = await sessionLeader('tagged', { [marker.split('=')[0]!]: marker.split('=')[1] });
    const bystander = await sessionLeader('bystander');
    started.push(session, tagged, bystander);
    expect(await runScript(marker, [`+ ${session.pid} ${session.start}`])).toBe(0);
    expect((await survivorsAfter([session, tagged], 10_000)).map((p) => p.name)).toEqual([]);
    expect(await liveStartTime(bystander.pid)).toBe(bystander.start);
  });

  it('leaves a session alone whose leader is another process now (the number reused)', async () => {
    const other = await sessionLeader('other');
    started.push(other);
    const stale = String(BigInt(other.start) - 1n);
    expect(await runScript(`${PROVIDER_PROCESS_MARKER}=x`, [`+ ${other.pid} ${stale}`])).toBe(0);
    expect(await liveStartTime(other.pid)).toBe(other.start);
  });

  it('forgets a session it is told to, and sweeps nothing after `stop`', async () => {
    const forgotten = await sessionLeader('forgotten');
    const kept = await sessionLeader('kept');
    started.push(forgotten, kept);
    const marker = `${PROVIDER_PROCESS_MARKER}=${randomUUID()}`;
    await runScript(marker, [
      `+ ${forgotten.pid} ${forgotten.start}`,
      `- ${forgotten.pid}`,
      `+ ${kept.pid} ${kept.start}`,
      'stop',
    ]);
    expect(await liveStartTime(forgotten.pid)).toBe(forgotten.start);
    expect(await liveStartTime(kept.pid)).toBe(kept.start);
  });

  it('is started again, with an error logged, when something kills it', async () => {
    const logger = recordingLogger();
    const watchdog = new GatewayWatchdog(`${PROVIDER_PROCESS_MARKER}=${randomUUID()}`, logger);
    try {
      watchdog.ensureRunning();
      const first = watchdog.pid!;
      started.push({ name: 'first watchdog', pid: first, start: (await liveStartTime(first))! });
      process.kill(first, 'SIGKILL');
      const until = Date.now() + 30_000;
      while ((watchdog.pid === undefined || watchdog.pid === first) && Date.now() < until) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(watchdog.pid).toBeDefined();
      expect(watchdog.pid).not.toBe(first);
      expect(logger.text('error')).toContain('The gateway watchdog ended');
    } finally {
      const last = watchdog.pid;
      watchdog.stop();
      if (last !== undefined) {
        const identity = { name: 'last watchdog', pid: last, start: '' };
        identity.start = (await liveStartTime(last)) ?? '';
        if (identity.start) expect(await survivorsAfter([identity], 30_000)).toEqual([]);
      }
    }
  });
});
