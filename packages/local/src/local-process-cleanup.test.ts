import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalSandboxProvider } from './local-sandbox-provider.js';
import {
  PROVIDER_PROCESS_MARKER,
  SANDBOX_PROCESS_MARKER,
  markedProcesses,
  reapProcesses,
} from './process-reaper.js';
import {
  hasProcFs,
  killSurvivors,
  liveStartTime,
  survivorsAfter,
  type ProcessIdentity,
} from './proc-test-support.js';

let base: string;
let provider: LocalSandboxProvider;
beforeEach(async () => {
  base = await mkdtemp(path.join(tmpdir(), 'sbx-procs-'));
  provider = new LocalSandboxProvider({ baseDir: base, allowHostBash: true });
});
afterEach(async () => {
  await provider.shutdown();
  await rm(base, { recursive: true, force: true });
});

/** The tag the provider gave its processes, read back from one of them. */
async function providerTag(id: string): Promise<string> {
  const out = await provider.get(id)!.executeCommand(`printf %s "$${PROVIDER_PROCESS_MARKER}"`);
  return out;
}

/**
 * The processes carrying `tag` once at least `atLeast` of them are readable. A process caught in
 * the middle of its exec has an unreadable environment for an instant, which a loaded machine
 * stretches; waiting for the count (bounded) keeps the test about cleanup, not about that instant.
 */
async function settledMarked(tag: string, atLeast: number): Promise<number[]> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const found = await markedProcesses(PROVIDER_PROCESS_MARKER, tag);
    if (found.length >= atLeast || Date.now() > deadline) return found;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

const ESCAPES = [
  'setsid sleep 300 >/dev/null 2>&1 < /dev/null &',
  '( (sleep 300 >/dev/null 2>&1 < /dev/null &) & )',
  'nohup sleep 300 >/dev/null 2>&1 < /dev/null &',
];

describe.runIf(hasProcFs)('nothing a local sandbox started outlives it', () => {
  it('release() kills background, setsid and double-forked processes of that sandbox only', async () => {
    const a = await provider.acquire({ userId: 'u', threadId: 'a' });
    const b = await provider.acquire({ userId: 'u', threadId: 'b' });
    for (const command of ESCAPES) await provider.get(a)!.executeCommand(command);
    await provider.get(b)!.executeCommand('setsid sleep 300 >/dev/null 2>&1 < /dev/null &');
    const tag = await providerTag(a);
    expect((await settledMarked(tag, 4)).length).toBeGreaterThanOrEqual(4);

    await provider.release(a);
    // Only b's process is left.
    expect(await markedProcesses(PROVIDER_PROCESS_MARKER, tag)).toHaveLength(1);
    await provider.release(b);
    expect(await markedProcesses(PROVIDER_PROCESS_MARKER, tag)).toEqual([]);
  });

  it('shutdown() kills what every sandbox of the provider started', async () => {
    const a = await provider.acquire({ userId: 'u', threadId: 'a' });
    await provider.get(a)!.executeCommand(ESCAPES[0]!);
    const tag = await providerTag(a);
    expect(await settledMarked(tag, 1)).toHaveLength(1);
    await provider.shutdown();
    expect(await markedProcesses(PROVIDER_PROCESS_MARKER, tag)).toEqual([]);
  });

  it('release() of a sandbox evicted from the cache still kills what it started', async () => {
    const small = new LocalSandboxProvider({
      baseDir: base,
      allowHostBash: true,
      maxCachedThreads: 1,
    });
    try {
      const a = await small.acquire({ userId: 'u', threadId: 'a' });
      await small.get(a)!.executeCommand(ESCAPES[0]!);
      const tag = await small.get(a)!.executeCommand(`printf %s "$${PROVIDER_PROCESS_MARKER}"`);
      await small.acquire({ userId: 'u', threadId: 'b' }); // evicts a
      expect(small.get(a)).toBeUndefined();
      expect(await settledMarked(tag, 1)).toHaveLength(1);
      await small.release(a);
      expect(await markedProcesses(PROVIDER_PROCESS_MARKER, tag)).toEqual([]);
    } finally {
      await small.shutdown();
    }
  });
});

/** A command that records its own pid in `<dir>/<name>`, then sleeps as that same process. */
function sleeper(dir: string, name: string): string {
  return `sh -c 'echo $$ > ${path.join(dir, name)}; exec sleep 300'`;
}

const QUIET = '>/dev/null 2>&1 </dev/null';
const STRIP_TAGS = `env -u ${SANDBOX_PROCESS_MARKER} -u ${PROVIDER_PROCESS_MARKER}`;

async function recorded(dir: string, name: string): Promise<ProcessIdentity> {
  const until = Date.now() + 60_000;
  for (;;) {
    const text = await readFile(path.join(dir, name), 'utf8').catch(() => '');
    const pid = Number(text.trim());
    const start = text.endsWith('\n') && pid > 0 ? await liveStartTime(pid) : undefined;
    if (start !== undefined) return { name, pid, start };
    if (Date.now() > until) throw new Error(`${name} never started`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe.runIf(hasProcFs)('processes that dropped the environment tags', () => {
  let started: ProcessIdentity[] = [];
  afterEach(async () => {
    await killSurvivors(started);
    started = [];
  });

  /** Starts, in sandbox `id`, what no tag scan finds but the sandbox's process groups hold. */
  async function startUntagged(id: string): Promise<ProcessIdentity[]> {
    const sandbox = provider.get(id)!;
    await sandbox.exec(`env -i ${sleeper(base, `${id}-env-i`)} ${QUIET} &`);
    await sandbox.exec(`${STRIP_TAGS} ${sleeper(base, `${id}-stripped-bg`)} ${QUIET} &`);
    await sandbox.processes.start(`exec ${STRIP_TAGS} ${sleeper(base, `${id}-stripped`)}`);
    const found = [];
    for (const name of ['env-i', 'stripped-bg', 'stripped']) {
      found.push(await recorded(base, `${id}-${name}`));
    }
    started.push(...found);
    return found;
  }

  it('release() signals every process group the sandbox started, tagged or not', async () => {
    const a = await provider.acquire({ userId: 'u', threadId: 'untagged-a' });
    const b = await provider.acquire({ userId: 'u', threadId: 'untagged-b' });
    const ofA = await startUntagged(a);
    const ofB = await startUntagged(b);
    await provider.release(a);
    expect((await survivorsAfter(ofA, 10_000)).map((p) => p.name)).toEqual([]);
    // Another sandbox's groups are not its to signal.
    expect((await survivorsAfter(ofB, 0)).map((p) => p.name)).toEqual(ofB.map((p) => p.name));
    await provider.release(b);
    expect((await survivorsAfter(ofB, 10_000)).map((p) => p.name)).toEqual([]);
  });

  it('shutdown() signals every process group of every sandbox, evicted ones included', async () => {
    const small = new LocalSandboxProvider({
      baseDir: base,
      allowHostBash: true,
      maxCachedThreads: 1,
    });
    const previous = provider;
    provider = small;
    try {
      const a = await small.acquire({ userId: 'u', threadId: 'untagged-c' });
      const ofA = await startUntagged(a);
      await small.acquire({ userId: 'u', threadId: 'untagged-d' }); // evicts a
      expect(small.get(a)).toBeUndefined();
      await small.shutdown();
      expect((await survivorsAfter(ofA, 10_000)).map((p) => p.name)).toEqual([]);
    } finally {
      provider = previous;
      await small.shutdown();
    }
  });

  it('a session whose leader is another process now (the number reused) is left alone', async () => {
    // A session of its own, as every command gets: its leader's pid is the session id.
    const other = spawn('sleep', ['300'], { detached: true, stdio: 'ignore' });
    const pid = other.pid!;
    const start = (await liveStartTime(pid))!;
    started.push({ name: 'unrelated', pid, start });
    const stale = String(BigInt(start) - 1n);
    expect(await reapProcesses({ sessions: new Map([[pid, stale]]) })).toBe(0);
    expect(await liveStartTime(pid)).toBe(start);
    expect(await reapProcesses({ sessions: new Map([[pid, start]]) })).toBe(1);
    expect(await survivorsAfter(started, 10_000)).toEqual([]);
  });
});
