import { describe, expect, it } from 'vitest';
import { SandboxRuntimeError } from '../errors/errors.js';
import { settle, track } from './deferred.js';
import { FakeSandboxProvider } from './fake-provider.js';
import { describeProviderContract } from './provider-contract.js';

describeProviderContract('FakeSandboxProvider', async () => ({
  provider: new FakeSandboxProvider(),
}));

describe('FakeSandboxProvider', () => {
  it('gives one deterministic id per user/thread and records the lifecycle', async () => {
    const provider = new FakeSandboxProvider();
    const id = await provider.acquire({ userId: 'u', threadId: 't' });
    expect(id).toBe('fake:u:t');
    expect(provider.idFor({ threadId: 't' })).toBe('fake:default:t');
    expect(provider.get(id)?.id).toBe(id);
    await provider.release(id);
    expect(provider.get(id)).toBeUndefined(); // parked
    expect(provider.released).toEqual([id]);
    expect(provider.releaseCount(id)).toBe(1);
    const again = await provider.acquire({ userId: 'u', threadId: 't' });
    expect(provider.get(again)).toBe(provider.sandboxes.get(id)); // same object revived
  });

  it('can keep sandboxes live on release (local-provider shape)', async () => {
    const provider = new FakeSandboxProvider({ releaseParks: false });
    const id = await provider.acquire({ threadId: 't' });
    await provider.release(id);
    expect(provider.get(id)).toBeDefined();
  });

  it('kill() makes a sandbox vanish; failNext() fails the next call only', async () => {
    const provider = new FakeSandboxProvider();
    const id = await provider.acquire({ threadId: 't' });
    provider.kill(id);
    expect(provider.get(id)).toBeUndefined();
    provider.failNext('acquire', new Error('backend down'));
    await expect(provider.acquire({ threadId: 't' })).rejects.toThrow('backend down');
    await expect(provider.acquire({ threadId: 't' })).resolves.toBe(id);
    provider.failNext('admit', new SandboxRuntimeError('refused'));
    expect(() => provider.admit({ threadId: 't' })).toThrow('refused');
  });

  it('lets a test hold acquire open through its gate', async () => {
    const provider = new FakeSandboxProvider();
    provider.gate.pause('acquire');
    const acquiring = track(provider.acquire({ threadId: 't' }));
    const call = await provider.gate.nextCall('acquire');
    await settle();
    expect(acquiring.settled).toBe(false);
    expect(provider.acquired).toEqual([]);
    await call.release();
    expect(await acquiring.promise).toBe('fake:default:t');
  });

  it('awaits the intercept hook before doing any work', async () => {
    const seen: string[] = [];
    const provider = new FakeSandboxProvider({
      intercept: async (call) => {
        seen.push(call.method);
      },
    });
    const id = await provider.acquire({ threadId: 't' });
    await provider.release(id);
    expect(seen).toEqual(['acquire', 'release']);
  });

  it('FakeSandbox records commands and scope releases and can fail a scope release', async () => {
    const provider = new FakeSandboxProvider();
    const sandbox = provider.get(await provider.acquire({ threadId: 't' }));
    if (!sandbox) throw new Error('no sandbox');
    expect(await sandbox.executeCommand('echo "hi there"')).toBe('hi there\n');
    expect(await sandbox.executeCommandInScope('ls', { scopeId: 'agent:1' })).toBe('(no output)');
    expect(sandbox.commands).toEqual([
      { command: 'echo "hi there"', scopeId: undefined },
      { command: 'ls', scopeId: 'agent:1' },
    ]);
    sandbox.failScopeRelease = new Error('session gone');
    await expect(sandbox.releaseCommandScope('agent:1')).rejects.toThrow('session gone');
    expect(sandbox.releasedScopes).toEqual(['agent:1']);
    await sandbox.writeFile('/mnt/user-data/workspace/a.txt', 'x\n');
    await sandbox.writeFile('/mnt/user-data/workspace/a.txt', 'y\n', { append: true });
    expect(await sandbox.readFile('/mnt/user-data/workspace/a.txt')).toBe('x\ny\n');
    expect(await sandbox.listDir('/mnt/user-data')).toEqual([
      '/mnt/user-data/workspace/',
      '/mnt/user-data/workspace/a.txt',
    ]);
    expect((await sandbox.glob('/mnt/user-data', '**/*.txt')).paths).toEqual([
      '/mnt/user-data/workspace/a.txt',
    ]);
    expect((await sandbox.grep('/mnt/user-data', 'Y')).matches).toEqual([
      { path: '/mnt/user-data/workspace/a.txt', lineNumber: 2, line: 'y' },
    ]);
    await expect(sandbox.readFile('/nope')).rejects.toMatchObject({
      code: 'SANDBOX_FILE_NOT_FOUND',
    });
  });
});
