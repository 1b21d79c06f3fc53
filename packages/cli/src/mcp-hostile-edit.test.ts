import { describe, expect, it } from 'vitest';
import { LOOP_PROBE_SCRIPT, runIsolated } from '@sbx/core/testing';
import { tempDir } from './test-support.js';

/**
 * The `str_replace` that grew 80 KB into 458 MiB, sent as an MCP client sends it: through the
 * sbx MCP server (official SDK client, in-memory transport) to a host sandbox with host bash off.
 * In a child with a small heap and a time limit, so a regression fails here instead of taking
 * the test runner down.
 */
describe('sbx MCP server: one str_replace cannot exhaust the gateway (isolated)', () => {
  it('replace_all of 80 KB of "a" by a 6 KB new_str is an isError result, in bounded memory and time', async () => {
    const home = await tempDir('mcp-hostile-edit');
    try {
      const run = await runIsolated({
        maxOldSpaceMb: 128,
        script: `
          import { Client } from '@modelcontextprotocol/sdk/client/index.js';
          import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
          import { parseSandboxConfig, silentLogger } from '@sbx/core';
          import { LocalSandboxProvider } from '@sbx/local';
          import { createSbxMcpServer } from '@sbx/cli';
          const config = parseSandboxConfig({ base_dir: ${JSON.stringify(home.dir)} });
          const provider = new LocalSandboxProvider({ config, logger: silentLogger });
          const session = await createSbxMcpServer({ provider, config, logger: silentLogger });
          const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
          const client = new Client({ name: 'hostile', version: '0.0.0' });
          await session.server.connect(serverSide);
          await client.connect(clientSide);
          const call = (name, args) => client.callTool({ name, arguments: args });
          const text = (r) => r.content.map((c) => c.text).join('');
          const path = '/mnt/user-data/workspace/a.txt';
          const wrote = await call('write_file', { path, content: 'a'.repeat(80_000) });
          const read = await call('read_file', { path });
          ${LOOP_PROBE_SCRIPT}
          const before = process.memoryUsage().rss;
          let peak = before;
          const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
          const edit = await call('str_replace', {
            path, old_str: 'a', new_str: 'b'.repeat(6_000), replace_all: true,
          });
          clearInterval(sampler);
          stopLoopProbe();
          const after = await call('read_file', { path, start_line: 1, end_line: 1 });
          console.log(JSON.stringify({
            wrote: text(wrote), read: read.isError, isError: edit.isError, text: text(edit),
            unchanged: !after.isError && !text(after).includes('b'),
            lateMs: worstLateMs(), rssGrowthMb: (peak - before) / 2 ** 20,
          }));
          await client.close();
          await session.close();
          await provider.shutdown();
        `,
      });
      expect(run.timedOut, `timed out; stderr: ${run.stderr}`).toBe(false);
      expect(run.code, run.stderr).toBe(0);
      const outcome = JSON.parse(run.stdout.trim().split('\n').at(-1) as string) as {
        wrote: string;
        read: boolean;
        isError: boolean;
        text: string;
        unchanged: boolean;
        lateMs: number;
        rssGrowthMb: number;
      };
      expect(outcome.wrote, JSON.stringify(outcome)).toBe('OK');
      expect(outcome.read).toBe(false);
      expect(outcome.isError).toBe(true);
      expect(outcome.text).toMatch(/^Error: str_replace would add 479920000 bytes/);
      expect(outcome.unchanged).toBe(true);
      expect(outcome.rssGrowthMb).toBeLessThan(64);
      expect(outcome.lateMs).toBeLessThan(1_000);
    } finally {
      await home.remove();
    }
  });
});
