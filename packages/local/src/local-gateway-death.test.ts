import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PROVIDER_PROCESS_MARKER, SANDBOX_PROCESS_MARKER } from './process-reaper.js';
import {
  hasProcFs,
  killSurvivors,
  liveStartTime,
  survivorsAfter,
  type ProcessIdentity,
} from './proc-test-support.js';

/** Generous: starting a TypeScript child and its commands takes seconds on a loaded machine. */
const READY_DEADLINE_MS = 90_000;
/** How long the processes of a dead gateway may take to be gone. */
const GONE_DEADLINE_MS = 30_000;

/** A command that records its own pid in `<dir>/<name>`, then sleeps as that same process. */
function sleeper(dir: string, name: string): string {
  return `sh -c 'echo $$ > ${path.join(dir, name)}; exec sleep 300'`;
}

/**
 * What a gateway's commands leave running, in every shape that leaves the command's process group
 * or drops the environment tags. A process that does both once its command's shell has ended
 * (`setsid env -i …`) is out of reach without a PID namespace (see the security model).
 */
function escapes(dir: string): { exec: Record<string, string>; start: Record<string, string> } {
  const quiet = '>/dev/null 2>&1 </dev/null';
  return {
    exec: {
      background: `${sleeper(dir, 'background')} ${quiet} &`,
      'env -i': `env -i ${sleeper(dir, 'env-i')} ${quiet} &`,
      setsid: `setsid ${sleeper(dir, 'setsid')} ${quiet} &`,
      'double fork': `( (${sleeper(dir, 'double-fork')} ${quiet} &) & )`,
      nohup: `nohup ${sleeper(dir, 'nohup')} ${quiet} &`,
    },
    start: {
      // Job control puts the job in a process group of its own; the running shell keeps the
      // session, so the session still names it.
      'env -i in a process group of its own': `set -m; env -i ${sleeper(dir, 'env-i-group')} ${quiet} & wait`,
      yielded: sleeper(dir, 'yielded'),
      'tags stripped by exec': `exec env -u ${SANDBOX_PROCESS_MARKER} -u ${PROVIDER_PROCESS_MARKER} ${sleeper(dir, 'stripped')}`,
    },
  };
}

/** A gateway in a process of its own: the local provider, one thread, the commands above. */
const GATEWAY_SCRIPT = `
  import { LocalSandboxProvider } from '@sbx/local';
  const provider = new LocalSandboxProvider({ baseDir: process.env.SBX_TEST_BASE, allowHostBash: true });
  const sandbox = provider.get(await provider.acquire({ userId: 'u', threadId: 'gateway-death' }));
  const commands = JSON.parse(process.env.SBX_TEST_COMMANDS);
  for (const command of Object.values(commands.exec)) {
    const r = await sandbox.exec(command);
    if (r.exitCode !== 0) throw new Error('exec failed: ' + command + ' ' + r.stderr);
  }
  for (const command of Object.values(commands.start)) await sandbox.processes.start(command);
  process.stdout.write('ready\\n');
  setInterval(() => {}, 60_000);
`;

function startGateway(base: string, commands: object): ChildProcess {
  const tsx = createRequire(import.meta.url).resolve('tsx');
  return spawn(
    process.execPath,
    ['--conditions=@sbx/source', '--import', tsx, '--input-type=module', '-e', GATEWAY_SCRIPT],
    {
      env: { ...process.env, SBX_TEST_BASE: base, SBX_TEST_COMMANDS: JSON.stringify(commands) },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
}

function readyOrExit(child: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    let stderr = '';
    const timer = setTimeout(
      () => reject(new Error('the gateway was not ready in time')),
      READY_DEADLINE_MS,
    );
    child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.stdout?.setEncoding('utf8').on('data', (d: string) => {
      if (!d.includes('ready')) return;
      clearTimeout(timer);
      resolve();
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`the gateway ended before it was ready (${code ?? signal}): ${stderr}`));
    });
  });
}

/** Every pid file the commands write, read once it is there (polled, with a deadline). */
async function recordedProcesses(
  dir: string,
  names: readonly string[],
): Promise<ProcessIdentity[]> {
  const until = Date.now() + READY_DEADLINE_MS;
  const found: ProcessIdentity[] = [];
  for (const name of names) {
    for (;;) {
      const text = await readFile(path.join(dir, name), 'utf8').catch(() => '');
      const pid = Number(text.trim());
      const start = text.endsWith('\n') && pid > 0 ? await liveStartTime(pid) : undefined;
      if (start !== undefined) {
        found.push({ name, pid, start });
        break;
      }
      if (Date.now() > until) throw new Error(`${name} never started`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  return found;
}

const fileNames = [
  'background',
  'env-i',
  'setsid',
  'double-fork',
  'nohup',
  'env-i-group',
  'yielded',
  'stripped',
];

describe.runIf(hasProcFs)('the processes of a gateway end with it', () => {
  let base: string;
  let pids: string;
  let gateway: ChildProcess | undefined;
  let started: ProcessIdentity[] = [];

  beforeEach(async () => {
    base = await mkdtemp(path.join(tmpdir(), 'sbx-gateway-death-'));
    pids = await mkdtemp(path.join(tmpdir(), 'sbx-gateway-death-pids-'));
  });
  afterEach(async () => {
    gateway?.kill('SIGKILL');
    await killSurvivors(started);
    started = [];
    await rm(base, { recursive: true, force: true });
    await rm(pids, { recursive: true, force: true });
  });

  for (const signal of ['SIGKILL', 'SIGTERM', 'SIGINT'] as const) {
    it(
      `a gateway ended by ${signal} leaves none of its commands' processes running`,
      {
        timeout: 2 * READY_DEADLINE_MS + GONE_DEADLINE_MS,
      },
      async () => {
        gateway = startGateway(base, escapes(pids));
        await readyOrExit(gateway);
        started = await recordedProcesses(pids, fileNames);
        expect(started.map((p) => p.name)).toEqual(fileNames);

        const exited = new Promise((resolve) => gateway!.once('exit', resolve));
        gateway.kill(signal);
        await exited;
        const survivors = await survivorsAfter(started, GONE_DEADLINE_MS);
        expect(survivors.map((p) => p.name)).toEqual([]);
      },
    );
  }
});
