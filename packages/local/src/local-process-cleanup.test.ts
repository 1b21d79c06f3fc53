import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalSandboxProvider } from './local-sandbox-provider.js';
import { PROVIDER_PROCESS_MARKER, markedProcesses } from './process-reaper.js';
import { hasProcFs } from './proc-test-support.js';

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
    expect((await markedProcesses(PROVIDER_PROCESS_MARKER, tag)).length).toBeGreaterThanOrEqual(4);

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
    expect(await markedProcesses(PROVIDER_PROCESS_MARKER, tag)).toHaveLength(1);
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
      expect(await markedProcesses(PROVIDER_PROCESS_MARKER, tag)).toHaveLength(1);
      await small.release(a);
      expect(await markedProcesses(PROVIDER_PROCESS_MARKER, tag)).toEqual([]);
    } finally {
      await small.shutdown();
    }
  });
});
