import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from '../contract/sandbox.js';
import type { ProcessHandle } from '../contract/sandbox-processes.js';
import { AbortedError, InvalidArgumentError } from '../errors/errors.js';
import { ProcessStateError } from '../errors/process-errors.js';
import { rejectionOf } from './rejection.js';

export interface ProcessSandboxUnderTest {
  sandbox: Sandbox;
  /** A writable, initially empty directory inside the sandbox. */
  workdir: string;
  cleanup?: () => Promise<void>;
}

export interface ProcessContractOptions {
  /**
   * The sandbox's per-stream capture limit of `exec`, when it is small enough to exceed in a test
   * (a few MiB at most); the truncation case is skipped without it.
   */
  captureLimitBytes?: number;
  /** Limit of each case (remote stand-ins are slower than the host). Default 30 s. */
  caseTimeoutMs?: number;
  /**
   * A second client of the sandbox under test, as another gateway instance would connect it, for
   * a sandbox whose processes other clients reach by id (`SandboxProcesses`). With it, the suite
   * checks that a process one client started is listed, fed, read and killed from the other.
   */
  secondClient?: (sut: ProcessSandboxUnderTest) => Promise<Sandbox>;
}

/** Resolves when `text` has appeared in what `listen` collects; the command waits on the test. */
function collector(): {
  listener: (chunk: string) => void;
  chunks: { at: number; text: string }[];
  until: (text: string) => Promise<void>;
} {
  const chunks: { at: number; text: string }[] = [];
  const waiters: { text: string; resolve: () => void }[] = [];
  const all = () => chunks.map((c) => c.text).join('');
  return {
    chunks,
    listener: (text) => {
      chunks.push({ at: Date.now(), text });
      const seen = all();
      for (const w of waiters.splice(0)) {
        if (seen.includes(w.text)) w.resolve();
        else waiters.push(w);
      }
    },
    until: (text) =>
      all().includes(text)
        ? Promise.resolve()
        : new Promise((resolve) => waiters.push({ text, resolve })),
  };
}

/**
 * Commands whose parts are joined by every shell operator that could split a `cd <dir> && `
 * prefix from what follows it (`(cd <dir> && a) & b` runs `b` elsewhere). Each writes `file` and
 * prints `pwd` once, after the operator; a sandbox passes when both happen in the given cwd.
 */
const CWD_SHAPES: readonly { name: string; make: (file: string) => string }[] = [
  { name: 'a & b; c', make: (file) => `true & echo x > ${file}; pwd` },
  { name: 'a & b & wait', make: (file) => `echo x > ${file} & pwd & wait` },
  { name: 'x || y', make: (file) => `false || { pwd; echo x > ${file}; }` },
  { name: 'a; b', make: (file) => `true; pwd; echo x > ${file}` },
  { name: 'a newline b', make: (file) => `true &\npwd\necho x > ${file}` },
  { name: 'a subshell, then b', make: (file) => `(cd -P . && true) & pwd; echo x > ${file}; wait` },
];

/**
 * Commands as processes, for every sandbox that runs a real shell: `exec`'s structured result
 * (status, separate streams, env, cwd, stdin, time limit, abort, output bound, streaming) and
 * `sandbox.processes` (start, poll, write, kill, list, cleanup when the client closes). Cases a
 * sandbox's `capabilities` rule out are checked to refuse clearly instead.
 *
 * `make` is called twice: once for the shared sandbox, once for the cleanup case, which closes its
 * sandbox.
 */
export function describeProcessContract(
  name: string,
  make: () => Promise<ProcessSandboxUnderTest>,
  options: ProcessContractOptions = {},
): void {
  const timeout = options.caseTimeoutMs ?? 30_000;

  describe(`Process contract: ${name}`, () => {
    let sut: ProcessSandboxUnderTest;
    let sb: Sandbox;
    let dir: string;
    let n = 0;
    const fresh = () => `${dir}/proc-case-${++n}`;

    beforeAll(async () => {
      sut = await make();
      sb = sut.sandbox;
      dir = sut.workdir.replace(/\/+$/, '');
    }, 120_000);
    afterAll(async () => {
      await sut?.cleanup?.();
    }, 120_000);

    describe('exec', () => {
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
        const target = fresh();
        await sb.writeFile(`${target}/marker.txt`, 'here\n');
        const r = await sb.exec('cat marker.txt', { cwd: target });
        expect(r).toMatchObject({ exitCode: 0, stdout: 'here\n' });
      });

      it(
        'runs every part of a command in the given cwd, whatever operator joins them',
        { timeout },
        async () => {
          const target = fresh();
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
          const target = fresh();
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
          const gate = `${fresh()}.go`;
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

      it(
        'delivers three lines printed a second apart as they are printed',
        { timeout },
        async () => {
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
        },
      );

      if (options.captureLimitBytes !== undefined) {
        const limit = options.captureLimitBytes;
        it('bounds what it keeps and says so', { timeout }, async () => {
          const r = await sb.exec(`head -c ${limit + 4096} /dev/zero | tr '\\0' 'a'`);
          expect(r.exitCode).toBe(0);
          expect(r.truncated).toBe(true);
          expect(r.stdout.length).toBeLessThan(limit + 4096);
        });
      }
    });

    describe('background processes', () => {
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
        const target = fresh();
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
          const target = fresh();
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

      it.skipIf(options.secondClient === undefined)(
        'another client of the sandbox reaches a running process by its id',
        { timeout },
        async () => {
          const peer = await options.secondClient!(sut);
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
        const other = await make();
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
  });
}
