import { describe, expect, it } from 'vitest';
import { SandboxAuthorizationError } from '../errors/errors.js';
import { MemorySandboxProvider } from '../testing/memory-sandbox-provider.js';
import { createToolContext } from './create-tool-context.js';
import { runTool } from './run-tool.js';
import { TOOL_NAMES } from './tool-schemas.js';

const P = '/mnt/user-data/workspace/a.txt';

const sampleInputs: Record<string, Record<string, unknown>> = {
  bash: { command: 'echo hi' },
  ls: { path: '/mnt/user-data/workspace' },
  glob: { pattern: '*', path: '/mnt/user-data/workspace' },
  grep: { pattern: 'x', path: '/mnt/user-data/workspace' },
  read_file: { path: P },
  write_file: { path: P, content: 'x' },
  str_replace: { path: P, old_str: 'a', new_str: 'b' },
};

describe('runTool', () => {
  it('dispatches by name and returns the tool result', async () => {
    const provider = new MemorySandboxProvider({ sandboxOptions: { files: { [P]: 'hello\n' } } });
    const ctx = createToolContext({ provider, threadId: 't1' });
    expect(await runTool('read_file', { description: 'Read a', path: P }, ctx)).toBe('hello\n');
  });

  it('never throws: unknown tools, invalid arguments and provider crashes are results', async () => {
    const provider = new MemorySandboxProvider();
    provider.acquire = async () => {
      throw new Error('provider exploded');
    };
    const ctx = createToolContext({ provider, threadId: 't1' });
    expect(await runTool('rm_rf', {}, ctx)).toBe(
      `Error: Unknown tool 'rm_rf'. Available tools: ${TOOL_NAMES.join(', ')}`,
    );
    expect(await runTool('ls', { path: 7 }, ctx)).toBe(
      'Error: Invalid arguments for ls: path: expected string, received number',
    );
    expect(await runTool('ls', { path: '/mnt/user-data/workspace' }, ctx)).toBe(
      'Error: Unexpected error initializing sandbox: Error: provider exploded',
    );
  });

  it('the description argument never changes execution', async () => {
    const provider = new MemorySandboxProvider({ sandboxOptions: { files: { [P]: 'same\n' } } });
    const ctx = createToolContext({ provider, threadId: 't1' });
    const a = await runTool('grep', { pattern: 'same', path: P }, ctx);
    const b = await runTool('grep', { pattern: 'same', path: P, description: 'rm -rf /' }, ctx);
    expect(a).toBe(b);
  });

  it.each(TOOL_NAMES)(
    '%s returns a denial as an Error: result and touches no sandbox',
    async (name) => {
      const provider = new MemorySandboxProvider();
      const ctx = createToolContext({
        provider,
        threadId: 't1',
        authorize: async () => {
          throw new SandboxAuthorizationError(undefined, 'guest');
        },
      });
      expect(await runTool(name, sampleInputs[name], ctx)).toBe(
        'Error: Sandbox execution is not permitted for your role (role=guest)',
      );
      expect(provider.acquireCalls).toEqual([]);
    },
  );

  it.each([
    [
      'read_file (ranged, with the full-file mark)',
      'read_file',
      { path: P, start_line: 1, end_line: 1 },
    ],
    ['write_file (gate read, write, re-hash)', 'write_file', { path: P, content: 'new\n' }],
    [
      'str_replace (gate read, read, write, re-hash)',
      'str_replace',
      { path: P, old_str: 'x', new_str: 'y' },
    ],
  ])('%s makes exactly one authorization decision', async (_label, name, input) => {
    const provider = new MemorySandboxProvider({ sandboxOptions: { files: { [P]: 'x\n' } } });
    let decisions = 0;
    const ctx = createToolContext({
      provider,
      threadId: 't1',
      authorize: async () => {
        decisions++;
      },
    });
    await runTool('read_file', { path: P }, ctx);
    decisions = 0;
    const result = await runTool(name, input, ctx);
    expect(result).not.toMatch(/^Error/);
    expect(provider.sandboxes.get('memory:default:t1')!.calls.length).toBeGreaterThan(1);
    expect(decisions).toBe(1);
  });
});
