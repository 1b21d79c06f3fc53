import { beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from '../contract/sandbox.js';
import type { ProcessHandle } from '../contract/sandbox-processes.js';
import { ProcessStateError } from '../errors/process-errors.js';
import type { ProcessSuite } from './process-contract.js';
import { CWD_SHAPES, collector } from './process-contract-fixtures.js';
import { rejectionOf } from './rejection.js';

/**
 * The `sandbox.processes` cases of the process contract: a clear refusal without background
 * processes; else start, poll, feed, kill, exit status and kept output, env, cwd and time limit,
 * a bounded wait, another client reaching a process by id, and every process ended when the
 * client closes.
 */
export function describeBackgroundProcessCases(suite: ProcessSuite): void {
  const { timeout } = suite;
  describe('background processes', () => {
    let sb: Sandbox;
    beforeAll(() => {
      sb = suite.sut().sandbox;
    });

    const background = () => sb.capabilities.backgroundProcesses;

    it('refuses clearly when the sandbox has none', { timeout }, async () => {
      if (background()) return;
      expect(await rejectionOf(sb.processes.start('sleep 1'))).toMatchObject({
        code: 'CAPABILITY_NOT_SUPPORTED',
      });
      expect(await sb.processes.list()).toEqual([]);
    });

    it(
      'starts a process that outlives the call, polls, feeds and kills it',
      { timeout },
      async () => {
        if (!background()) return;
        const out = collector();
        const handle = await sb.processes.start(
          'echo ready; read line; echo "got:$line"; sleep 60',
          {
            onStdout: out.listener,
          },
        );
        expect(handle.info().status).toBe('running');
        await out.until('ready');
        const first = await handle.output();
        expect(first.text).toContain('ready');
        if (sb.capabilities.stdin) {
          await handle.write('hello\n');
          await out.until('got:hello');
          const next = await handle.output({ since: first.cursor });
          expect(next.text).toBe('got:hello\n');
          expect(next.droppedBytes).toBe(0);
        } else {
          expect(await rejectionOf(handle.write('x'))).toMatchObject({
            code: 'CAPABILITY_NOT_SUPPORTED',
          });
        }
        expect((await sb.processes.list()).map((p) => p.id)).toContain(handle.id);
        expect((await sb.processes.get(handle.id))?.id).toBe(handle.id);
        await handle.kill();
        const exit = await handle.wait();
        expect(exit?.exitCode === null || exit?.exitCode !== 0).toBe(true);
        expect(handle.info().status).toBe('exited');
        // Killing an ended process is a no-op; writing to it is refused.
        await handle.kill('SIGKILL');
        if (sb.capabilities.stdin) {
          expect(ProcessStateError.is(await rejectionOf(handle.write('late\n')))).toBe(true);
        }
      },
    );

    it(
      'reports the exit status and keeps the output of an ended process',
      { timeout },
      async () => {
        if (!background()) return;
        const handle = await sb.processes.start('echo out; echo err >&2; exit 4');
        expect(await handle.wait()).toMatchObject({ exitCode: 4, timedOut: false });
        const output = await handle.output();
        expect(output).toMatchObject({
          stdout: 'out\n',
          stderr: 'err\n',
          status: 'exited',
          exitCode: 4,
        });
        expect(handle.info()).toMatchObject({ status: 'exited', exitCode: 4 });
      },
    );

    it('takes env and cwd, and honours its own time limit', { timeout }, async () => {
      if (!background()) return;
      const target = suite.fresh();
      await sb.writeFile(`${target}/m.txt`, 'm');
      const handle = await sb.processes.start('echo "$SBX_BG_VAR"; ls', {
        env: { SBX_BG_VAR: 'bg' },
        cwd: target,
      });
      await handle.wait();
      expect((await handle.output()).stdout).toBe('bg\nm.txt\n');
      const slow = await sb.processes.start('sleep 60', { timeoutMs: 1_000 });
      expect(await slow.wait()).toMatchObject({ timedOut: true });
    });

    it(
      'runs every part of a background command in its cwd, whatever operator joins them',
      { timeout },
      async () => {
        if (!background()) return;
        const target = suite.fresh();
        await sb.writeFile(`${target}/.keep`, '');
        const where = (await sb.exec('pwd', { cwd: target })).stdout;
        for (const [i, shape] of CWD_SHAPES.entries()) {
          const handle = await sb.processes.start(shape.make(`bg-amp-${i}`), { cwd: target });
          expect(await handle.wait()).toMatchObject({ exitCode: 0 });
          expect({ shape: shape.name, stdout: (await handle.output()).stdout }).toEqual({
            shape: shape.name,
            stdout: where,
          });
          expect(await sb.readFile(`${target}/bg-amp-${i}`)).toBe('x\n');
        }
      },
    );

    it('waits with a limit, and does not know ids it never gave out', { timeout }, async () => {
      if (!background()) return;
      const handle = await sb.processes.start('sleep 60');
      expect(await handle.wait({ timeoutMs: 200 })).toBeUndefined();
      expect(handle.info().status).toBe('running');
      await handle.kill('SIGKILL');
      await handle.wait();
      expect(await sb.processes.get('no-such-process')).toBeUndefined();
      expect(await sb.processes.get(undefined as unknown as string)).toBeUndefined();
    });

    it.skipIf(suite.options.secondClient === undefined)(
      'another client of the sandbox reaches a running process by its id',
      { timeout },
      async () => {
        const peer = await suite.options.secondClient!(suite.sut());
        try {
          const out = collector();
          const handle = await sb.processes.start(
            'echo ready; read line; echo "got:$line"; sleep 60',
            { onStdout: out.listener },
          );
          await out.until('ready');
          expect((await peer.processes.list()).map((p) => p.id)).toContain(handle.id);
          const there = await peer.processes.get(handle.id);
          expect(there?.command).toBe(handle.command);
          expect(there?.info().status).toBe('running');
          await there!.write('hi\n');
          await out.until('got:hi');
          await there!.kill('SIGKILL');
          expect((await there!.wait())?.exitCode === 0).toBe(false);
          // Its end arrives after its output, so what the peer read is complete by now.
          expect((await there!.output()).text).toContain('got:hi');
          expect((await handle.wait())?.exitCode === 0).toBe(false);
          expect(await peer.processes.get(`${handle.id}0`)).toBeUndefined();
        } finally {
          await peer.close();
        }
      },
    );

    it('ends every process when the sandbox client closes', { timeout: 120_000 }, async () => {
      if (!background()) return;
      const other = await suite.make();
      let handle: ProcessHandle | undefined;
      try {
        handle = await other.sandbox.processes.start('sleep 300');
        await other.sandbox.close();
        expect(handle.info().status).toBe('exited');
        expect(await rejectionOf(other.sandbox.processes.start('true'))).toMatchObject({
          code: 'PROCESS_STATE',
        });
      } finally {
        await other.cleanup?.();
      }
    });
  });
}
