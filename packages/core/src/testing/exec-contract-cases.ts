import { beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from '../contract/sandbox.js';
import { AbortedError, InvalidArgumentError } from '../errors/errors.js';
import type { ProcessSuite } from './process-contract.js';
import { CWD_SHAPES, collector } from './process-contract-fixtures.js';
import { rejectionOf } from './rejection.js';

/**
 * The `exec` cases of the process contract: the structured result (status, separate streams),
 * env, cwd (for every shell operator), no splicing into a shell line, time limit, abort, typed
 * refusals, stdin, streaming as printed and the output bound.
 */
export function describeExecCases(suite: ProcessSuite): void {
  const { timeout } = suite;
  describe('exec', () => {
    let sb: Sandbox;
    beforeAll(() => {
      sb = suite.sut().sandbox;
    });

    it('reports status and the two streams apart', { timeout }, async () => {
      const r = await sb.exec('echo out; echo err >&2; exit 3');
      expect(r).toMatchObject({ exitCode: 3, stdout: 'out\n', stderr: 'err\n', timedOut: false });
      expect(r.truncated).toBe(false);
      expect(r.durationMs).toBeGreaterThanOrEqual(0);
    });

    it(
      'a command printing "Error:" and exiting 0 succeeds; `false` fails',
      { timeout },
      async () => {
        expect(await sb.exec('echo "Error: not really"')).toMatchObject({
          exitCode: 0,
          stdout: 'Error: not really\n',
        });
        expect((await sb.exec('false')).exitCode).toBe(1);
        expect(await sb.executeCommand('false')).toBe('\nExit Code: 1');
      },
    );

    it('takes a per-call env that does not persist', { timeout }, async () => {
      const first = await sb.exec('echo "v=$SBX_PROC_VAR"', { env: { SBX_PROC_VAR: 'one' } });
      expect(first.stdout).toBe('v=one\n');
      expect((await sb.exec('echo "v=$SBX_PROC_VAR"')).stdout).toBe('v=\n');
    });

    it('runs in the given cwd', { timeout }, async () => {
      const target = suite.fresh();
      await sb.writeFile(`${target}/marker.txt`, 'here\n');
      const r = await sb.exec('cat marker.txt', { cwd: target });
      expect(r).toMatchObject({ exitCode: 0, stdout: 'here\n' });
    });

    it(
      'runs every part of a command in the given cwd, whatever operator joins them',
      { timeout },
      async () => {
        const target = suite.fresh();
        await sb.writeFile(`${target}/.keep`, '');
        const where = (await sb.exec('pwd', { cwd: target })).stdout;
        expect(where).toMatch(/^\/.*\n$/);
        for (const [i, shape] of CWD_SHAPES.entries()) {
          const r = await sb.exec(shape.make(`amp-${i}`), { cwd: target });
          expect({ shape: shape.name, exitCode: r.exitCode, stdout: r.stdout }).toEqual({
            shape: shape.name,
            exitCode: 0,
            stdout: where,
          });
          expect(await sb.readFile(`${target}/amp-${i}`)).toBe('x\n');
        }
      },
    );

    it(
      'never splices a command into a shell line of its own: a stray `}` or `)` runs nothing',
      { timeout },
      async () => {
        const target = suite.fresh();
        await sb.writeFile(`${target}/.keep`, '');
        const withInput = sb.capabilities.stdin ? [{ stdin: 'input\n' }] : [];
        for (const [i, extra] of [{}, ...withInput].entries()) {
          for (const [j, closer] of ['}', ')', 'fi', 'done'].entries()) {
            // A syntax error fails the command (or, where input races a command that never
            // reads it, the call); either way nothing of it may run.
            const outcome = await sb
              .exec(`echo ran > spliced-${i}-${j}; ${closer}`, { cwd: target, ...extra })
              .then(
                (r) => r.exitCode,
                () => 'refused',
              );
            expect(outcome).not.toBe(0);
          }
        }
        expect((await sb.listDir(target)).filter((p) => p.includes('spliced'))).toEqual([]);
      },
    );

    it('kills a command at its time limit', { timeout }, async () => {
      const r = await sb.exec('echo before; sleep 30', { timeoutMs: 1_500 });
      expect(r.timedOut).toBe(true);
      expect(r.exitCode).toBeNull();
      expect(r.timeoutMs).toBe(1_500);
      expect(await sb.executeCommand('sleep 30', { timeoutMs: 1_000 })).toMatch(
        /^Command timed out after 1 second/,
      );
    });

    it('rejects with AbortedError when the caller aborts', { timeout }, async () => {
      const controller = new AbortController();
      const out = collector();
      const running = sb.exec('echo started; sleep 30', {
        signal: controller.signal,
        onStdout: out.listener,
      });
      if (sb.capabilities.streaming) await out.until('started');
      controller.abort();
      expect(AbortedError.is(await rejectionOf(running))).toBe(true);
    });

    it('refuses bad input with a typed error', { timeout }, async () => {
      expect(InvalidArgumentError.is(await rejectionOf(sb.exec('')))).toBe(true);
      expect(
        InvalidArgumentError.is(await rejectionOf(sb.exec('true', { env: { 'A=B': 'x' } }))),
      ).toBe(true);
    });

    it('feeds stdin, or refuses it as the capabilities say', { timeout }, async () => {
      if (!sb.capabilities.stdin) {
        expect(await rejectionOf(sb.exec('cat', { stdin: 'x' }))).toMatchObject({
          code: 'CAPABILITY_NOT_SUPPORTED',
        });
        return;
      }
      expect((await sb.exec('cat', { stdin: 'line one\nline two\n' })).stdout).toBe(
        'line one\nline two\n',
      );
      expect((await sb.exec('wc -c', { stdin: new Uint8Array([1, 2, 3]) })).stdout.trim()).toBe(
        '3',
      );
      // Without stdin a reading command sees EOF at once instead of waiting.
      expect((await sb.exec('cat; echo done')).stdout).toBe('done\n');
    });

    it(
      'streams output while the command runs (the command waits for the test)',
      { timeout },
      async () => {
        const gate = `${suite.fresh()}.go`;
        const out = collector();
        const running = sb.exec(
          `echo first; i=0; while [ ! -e '${gate}' ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; echo second`,
          { onStdout: out.listener },
        );
        if (!sb.capabilities.streaming) {
          // Everything arrives once, at the end; the command gives up waiting after 20 s.
          await sb.writeFile(gate, '');
          const r = await running;
          expect(out.chunks.map((c) => c.text).join('')).toBe(r.stdout);
          return;
        }
        // Only a listener called before the command ends lets it finish: it waits for this file.
        await out.until('first');
        await sb.writeFile(gate, '');
        const r = await running;
        expect(r.stdout).toBe('first\nsecond\n');
        expect(out.chunks.map((c) => c.text).join('')).toBe('first\nsecond\n');
      },
    );

    it('delivers three lines printed a second apart as they are printed', { timeout }, async () => {
      const out = collector();
      const r = await sb.exec('echo one; sleep 1; echo two; sleep 1; echo three', {
        onStdout: out.listener,
      });
      expect(r.stdout).toBe('one\ntwo\nthree\n');
      if (!sb.capabilities.streaming) return;
      expect(out.chunks.length).toBeGreaterThanOrEqual(3);
      const first = out.chunks[0] as { at: number };
      const last = out.chunks.at(-1) as { at: number };
      // The command's own sleeps spread the deliveries: a buffered stream would bunch them.
      expect(last.at - first.at).toBeGreaterThanOrEqual(1_500);
    });

    if (suite.options.captureLimitBytes !== undefined) {
      const limit = suite.options.captureLimitBytes;
      it('bounds what it keeps and says so', { timeout }, async () => {
        const r = await sb.exec(`head -c ${limit + 4096} /dev/zero | tr '\\0' 'a'`);
        expect(r.exitCode).toBe(0);
        expect(r.truncated).toBe(true);
        expect(r.stdout.length).toBeLessThan(limit + 4096);
      });
    }
  });
}
