import { describe, expect, it } from 'vitest';
import { SandboxAuthorizationError, SandboxPermissionError } from '../errors/errors.js';
import { MemorySandboxProvider } from '../testing/memory-sandbox-provider.js';
import type { MemorySandboxCall } from '../testing/memory-sandbox.js';
import { createToolContext } from './create-tool-context.js';
import { readBeforeWriteBlockedMessage, sha256Hex, toolSessionOf } from './read-before-write.js';
import { readFileTool } from './read-file-tool.js';
import { strReplaceTool } from './str-replace-tool.js';
import type { ToolConfigInput } from './tool-config.js';
import type { ToolContext } from './tool-context.js';
import { ToolSession } from './tool-session.js';
import { writeFileTool } from './write-file-tool.js';

const P = '/mnt/user-data/outputs/report.md';

function setup(
  config: ToolConfigInput = {},
  intercept?: (call: MemorySandboxCall) => void | Promise<void>,
) {
  const provider = new MemorySandboxProvider({ sandboxOptions: intercept ? { intercept } : {} });
  const ctx = createToolContext({ provider, threadId: 't1', config });
  const sandbox = async (c: ToolContext = ctx) => {
    const id = await provider.acquire({ threadId: 't1' });
    c.state.sandboxId = id;
    return provider.sandboxes.get(id)!;
  };
  return { provider, ctx, sandbox };
}

const blocked = (tool: string, path = P) => readBeforeWriteBlockedMessage(tool, path);

describe('§10.10 read-before-write gate', () => {
  it('lets a new file be created', async () => {
    const { ctx } = setup();
    expect(await writeFileTool(ctx, { path: P, content: 'new' })).toBe('OK');
  });

  it('blocks overwrite, append and str_replace of an existing file the agent never read', async () => {
    const { ctx, sandbox } = setup();
    const sb = await sandbox();
    sb.setFile(P, 'original\n');
    expect(await writeFileTool(ctx, { path: P, content: 'x' })).toBe(blocked('write_file'));
    expect(await writeFileTool(ctx, { path: P, content: 'x', append: true })).toBe(
      blocked('write_file'),
    );
    expect(await strReplaceTool(ctx, { path: P, old_str: 'original', new_str: 'x' })).toBe(
      blocked('str_replace'),
    );
    expect(sb.fileText(P)).toBe('original\n');
    expect(blocked('write_file')).toContain('read_file');
  });

  it('allows the write after a read of the current version', async () => {
    const { ctx, sandbox } = setup();
    (await sandbox()).setFile(P, 'original\n');
    await readFileTool(ctx, { path: P });
    expect(await strReplaceTool(ctx, { path: P, old_str: 'original', new_str: 'edited' })).toBe(
      'OK',
    );
  });

  it('blocks again when the file changed after the read', async () => {
    const { ctx, sandbox } = setup();
    const sb = await sandbox();
    sb.setFile(P, 'v1\n');
    await readFileTool(ctx, { path: P });
    sb.setFile(P, 'v2 from a user upload\n');
    expect(await writeFileTool(ctx, { path: P, content: 'mine' })).toBe(blocked('write_file'));
  });

  it('the newest read wins', async () => {
    const { ctx, sandbox } = setup();
    const sb = await sandbox();
    sb.setFile(P, 'v1\n');
    await readFileTool(ctx, { path: P });
    sb.setFile(P, 'v2\n');
    await readFileTool(ctx, { path: P });
    expect(await writeFileTool(ctx, { path: P, content: 'v3' })).toBe('OK');
  });

  it('a forgotten mark (e.g. after summarising history) blocks', async () => {
    const { ctx, sandbox } = setup();
    const sb = await sandbox();
    sb.setFile(P, 'v1\n');
    await readFileTool(ctx, { path: P });
    toolSessionOf(ctx).clear();
    expect(await writeFileTool(ctx, { path: P, content: 'x' })).toBe(blocked('write_file'));
  });

  it('consecutive edits work: a successful write re-records the hash (divergence)', async () => {
    const { ctx, sandbox } = setup();
    const sb = await sandbox();
    sb.setFile(P, 'a\nb\n');
    await readFileTool(ctx, { path: P });
    expect(await strReplaceTool(ctx, { path: P, old_str: 'a', new_str: 'A' })).toBe('OK');
    expect(await strReplaceTool(ctx, { path: P, old_str: 'b', new_str: 'B' })).toBe('OK');
    expect(await writeFileTool(ctx, { path: P, content: 'c\n', append: true })).toBe('OK');
    expect(await writeFileTool(ctx, { path: P, content: 'fresh\n' })).toBe('OK');
    expect(sb.fileText(P)).toBe('fresh\n');
  });

  it('a ranged read records the hash of the full file', async () => {
    const { ctx, sandbox } = setup();
    const sb = await sandbox();
    sb.setFile(P, 'l1\nl2\nl3\n');
    expect(await readFileTool(ctx, { path: P, start_line: 2, end_line: 2 })).toBe('l2');
    expect(toolSessionOf(ctx).readMark(sb.id, P)).toBe(sha256Hex('l1\nl2\nl3\n'));
    expect(await writeFileTool(ctx, { path: P, content: 'x' })).toBe('OK');
  });

  it('the mark hashes exactly the content shown to the model', async () => {
    const { ctx, sandbox } = setup();
    const sb = await sandbox();
    sb.setFile(P, 'shown\r\nwith CRLF\n');
    const shown = await readFileTool(ctx, { path: P });
    expect(toolSessionOf(ctx).readMark(sb.id, P)).toBe(sha256Hex(shown));
  });

  it('a failed read records nothing', async () => {
    const { ctx, sandbox } = setup();
    expect(await readFileTool(ctx, { path: P })).toBe(`Error: File not found: ${P}`);
    (await sandbox()).setFile(P, 'appeared later\n');
    expect(await writeFileTool(ctx, { path: P, content: 'x' })).toBe(blocked('write_file'));
  });

  it('matches marks by lexically normalized path', async () => {
    const { ctx, sandbox } = setup();
    (await sandbox()).setFile(P, 'v1\n');
    await readFileTool(ctx, { path: P });
    expect(
      await writeFileTool(ctx, {
        path: '/mnt/user-data/outputs/../outputs/report.md',
        content: 'x',
      }),
    ).toBe('OK');
  });

  it('fails open when the file cannot be inspected (other than not found)', async () => {
    let denyReads = false;
    const { ctx, sandbox } = setup({}, (call) => {
      if (denyReads && call.operation === 'readFile') {
        throw new SandboxPermissionError('Permission denied', { path: call.target });
      }
    });
    (await sandbox()).setFile(P, 'unreadable\n');
    denyReads = true;
    expect(await writeFileTool(ctx, { path: P, content: 'x' })).toBe('OK');
  });

  it('never fails open on an authorization denial', async () => {
    let deny = false;
    const { ctx, sandbox } = setup({}, (call) => {
      if (deny && call.operation === 'readFile')
        throw new SandboxAuthorizationError(undefined, 'user');
    });
    const sb = await sandbox();
    sb.setFile(P, 'v1\n');
    deny = true;
    expect(await writeFileTool(ctx, { path: P, content: 'x' })).toBe(
      'Error: Sandbox execution is not permitted for your role (role=user)',
    );
    expect(sb.fileText(P)).toBe('v1\n');
  });

  it('two agents (sessions) appending on one read version: exactly one succeeds', async () => {
    const { provider, ctx, sandbox } = setup();
    const sb = await sandbox();
    sb.setFile(P, 'log\n');
    const other = createToolContext({ provider, threadId: 't1', state: { ...ctx.state } });
    await readFileTool(ctx, { path: P });
    await readFileTool(other, { path: P });
    const results = await Promise.all([
      writeFileTool(ctx, { path: P, content: 'a\n', append: true }),
      writeFileTool(other, { path: P, content: 'b\n', append: true }),
    ]);
    expect(results.filter((r) => r === 'OK')).toHaveLength(1);
    expect(results.filter((r) => r === blocked('write_file'))).toHaveLength(1);
  });

  it('sessions do not share marks unless the host shares the session', async () => {
    const { provider, ctx, sandbox } = setup();
    (await sandbox()).setFile(P, 'v1\n');
    await readFileTool(ctx, { path: P });
    const fresh = createToolContext({ provider, threadId: 't1', state: { ...ctx.state } });
    expect(await writeFileTool(fresh, { path: P, content: 'x' })).toBe(blocked('write_file'));
    const shared = createToolContext({
      provider,
      threadId: 't1',
      state: { ...ctx.state },
      session: ToolSession.fromJSON(JSON.parse(JSON.stringify(ctx.session))),
    });
    expect(await writeFileTool(shared, { path: P, content: 'x' })).toBe('OK');
  });

  it('is on by default and can be switched off by config', async () => {
    const { ctx, sandbox } = setup({ readBeforeWrite: { enabled: false } });
    (await sandbox()).setFile(P, 'v1\n');
    expect(await writeFileTool(ctx, { path: P, content: 'x' })).toBe('OK');
  });
});
