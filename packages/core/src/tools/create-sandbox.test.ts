import { describe, expect, it } from 'vitest';
import { Sandbox } from '../contract/sandbox.js';
import {
  InvalidArgumentError,
  SandboxNotFoundError,
  SandboxRuntimeError,
} from '../errors/errors.js';
import { MemorySandboxProvider } from '../testing/memory-sandbox-provider.js';
import { rejectionOf } from '../testing/rejection.js';
import { ASYNC_DISPOSE, createSandbox } from './create-sandbox.js';

const FILE = '/mnt/user-data/workspace/a.txt';

function provider(): MemorySandboxProvider {
  return new MemorySandboxProvider({
    sandboxOptions: { onCommand: (command) => `ran ${command}\n`, files: { [FILE]: 'hi\n' } },
  });
}

describe('createSandbox', () => {
  it("returns the thread's sandbox and releases it at the end of an `await using` scope", async () => {
    const p = provider();
    const id = p.idFor({ userId: 'alice', threadId: 't1' });
    {
      await using sandbox = await createSandbox({ provider: p, userId: 'alice', threadId: 't1' });
      expect(sandbox.id).toBe(id);
      expect(sandbox).toBeInstanceOf(Sandbox);
      // Methods run on the provider's own sandbox (its private fields included).
      expect((await sandbox.exec('echo hi')).stdout).toBe('ran echo hi\n');
      expect(await sandbox.readFile(FILE)).toBe('hi\n');
      expect(p.acquireCalls).toEqual([{ userId: 'alice', threadId: 't1' }]);
      expect(p.releaseCalls).toEqual([]);
    }
    expect(p.releaseCalls).toEqual([id]);
  });

  it('release() releases once however often it is called, and a disposal after it too', async () => {
    const p = provider();
    const sandbox = await createSandbox({ provider: p, threadId: 't1' });
    expect(sandbox.released).toBe(false);
    await Promise.all([sandbox.release(), sandbox.release()]);
    await sandbox[ASYNC_DISPOSE]();
    expect(sandbox.released).toBe(true);
    expect(p.releaseCalls).toEqual([p.idFor({ threadId: 't1' })]);
  });

  it('disposes by the key Node gives Symbol.asyncDispose', async () => {
    expect(ASYNC_DISPOSE).toBe(Symbol.asyncDispose);
    expect(ASYNC_DISPOSE).toBe(Symbol.for('nodejs.asyncDispose'));
  });

  it('refuses every method once released, processes included', async () => {
    const p = provider();
    const sandbox = await createSandbox({ provider: p, threadId: 't1' });
    await sandbox.release();
    for (const attempt of [
      () => sandbox.exec('echo hi'),
      () => sandbox.readFile(FILE),
      () => sandbox.writeFile(FILE, 'x'),
      () => sandbox.processes.start('sleep 1'),
      () => sandbox.processes.list(),
    ]) {
      const error = await rejectionOf(attempt());
      expect(error).toBeInstanceOf(SandboxRuntimeError);
      expect((error as Error).message).toContain('was released by this handle');
    }
    expect(p.sandboxes.get(sandbox.id)?.commands).toEqual([]);
  });

  it.each([
    ['a thread id with a colon', { threadId: ['t', '1'].join(':') }],
    ['a traversing thread id', { threadId: ['..', 'etc'].join('/') }],
    ['an empty thread id', { threadId: '' }],
    [
      'a user id with a control character',
      { userId: `a${String.fromCharCode(10)}b`, threadId: 't' },
    ],
  ])('refuses %s before the provider is asked', async (_name, ids) => {
    const p = provider();
    const error = await rejectionOf(createSandbox({ provider: p, ...ids }));
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect(p.acquireCalls).toEqual([]);
  });

  it('refuses a missing thread id from an untyped caller', async () => {
    const p = provider();
    const options = JSON.parse('{"userId":"alice"}') as { threadId: string };
    expect(await rejectionOf(createSandbox({ provider: p, ...options }))).toBeInstanceOf(
      InvalidArgumentError,
    );
    expect(p.acquireCalls).toEqual([]);
  });

  it('releases a sandbox that vanished right after its acquisition, and throws', async () => {
    const p = new MemorySandboxProvider();
    const id = p.idFor({ threadId: 't1' });
    const acquire = p.acquire.bind(p);
    p.acquire = async (options) => {
      const acquired = await acquire(options);
      p.kill(acquired);
      return acquired;
    };
    expect(await rejectionOf(createSandbox({ provider: p, threadId: 't1' }))).toBeInstanceOf(
      SandboxNotFoundError,
    );
    expect(p.releaseCalls).toEqual([id]);
  });
});
