import { spawn } from 'node:child_process';
import { shellArgs } from './shell.js';
import type { Readable } from 'node:stream';
import { extraStdio, startPlan } from './confinement/spawn-plan.js';
import type {
  LaunchOptions,
  LaunchedExit,
  LaunchedProcess,
  ProcessLauncher,
  ProcessSink,
} from '@sbx/core/internal';
import { SandboxRuntimeError, type Logger } from '@sbx/core';
import { sharedOutputPacer, type OutputPacer } from '@sbx/core/internal';
import type { PreparedHostCommand } from './local-exec.js';
import { writeInput } from './stdin-writer.js';

/** After the shell exits, how long output still in the pipes may take to arrive. */
const DRAIN_AFTER_EXIT_MS = 250;

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch (err) {
    // ESRCH: the group is gone already, which is what a kill wants.
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
}

function closed(stream: Readable): Promise<void> {
  if (stream.closed || stream.destroyed) return Promise.resolve();
  return new Promise((resolve) => stream.once('close', () => resolve()));
}

export interface LocalLaunchHooks {
  prepare(command: string, options: LaunchOptions): Promise<PreparedHostCommand>;
  rewrite(env: Readonly<Record<string, string>> | undefined): Promise<(text: string) => string>;
  readonly logger: Logger;
  readonly sandboxId: string;
  /** Back-pressure on the children's output (default: the one every host command shares). */
  readonly pacer?: OutputPacer;
}

/**
 * Background processes on the host: the shell leads its own process group (`detached`), so a kill
 * reaches everything it started; stdin is a pipe the caller writes to. Output is read under the
 * shared pacer's back-pressure and handed on raw: the process table applies the same masking and
 * redaction as `exec` (`outputRewrite`), a line at a time, to what it still keeps when read.
 */
export class LocalProcessLauncher implements ProcessLauncher {
  // The pipes are read under the shared pacer already (`launch`): the table must not pace again.
  readonly pacesOutput = true;

  constructor(private readonly hooks: LocalLaunchHooks) {}

  outputRewrite(options: LaunchOptions): Promise<(text: string) => string> {
    return this.hooks.rewrite(options.env);
  }

  async launch(
    command: string,
    options: LaunchOptions,
    sink: ProcessSink,
  ): Promise<LaunchedProcess> {
    const prepared = await this.hooks.prepare(command, options);
    prepared.session?.beforeSpawn();
    const { plan } = prepared;
    const child = spawn(
      plan?.file ?? prepared.shell,
      plan ? [...plan.args] : shellArgs(prepared.shell, prepared.command),
      {
        detached: true,
        stdio: ['pipe', 'pipe', 'pipe', ...extraStdio(plan)],
        env: prepared.env,
        ...(prepared.cwd !== undefined ? { cwd: prepared.cwd } : {}),
        windowsHide: true,
        ...(plan?.uid !== undefined ? { uid: plan.uid } : {}),
        ...(plan?.gid !== undefined ? { gid: plan.gid } : {}),
      },
    );
    startPlan(child, plan, (error) => {
      this.hooks.logger.error('A confined process could not be placed under its limits', {
        sandboxId: this.hooks.sandboxId,
        error: error instanceof Error ? error.message : String(error),
      });
      if (child.pid !== undefined) signalGroup(child.pid, 'SIGKILL');
    });
    const spawned = child.pid;
    if (spawned !== undefined) {
      prepared.session?.started(spawned);
      child.once('exit', () => prepared.session?.ended(spawned));
    }
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', () => resolve());
      child.once('error', (error) =>
        reject(
          new SandboxRuntimeError(`Failed to start shell ${prepared.shell}: ${error.message}`),
        ),
      );
    });
    const pid = child.pid as number;
    const stdout = child.stdout as Readable;
    const stderr = child.stderr as Readable;
    const pacer = this.hooks.pacer ?? sharedOutputPacer;
    pacer.pace(stdout, (chunk) => sink.stdout(chunk));
    pacer.pace(stderr, (chunk) => sink.stderr(chunk));
    const stdin = child.stdin;
    stdin?.on('error', () => {});

    const exited = new Promise<LaunchedExit>((resolve) => {
      child.once('exit', (code, signal) => {
        const drained = Promise.all([closed(stdout), closed(stderr)]);
        const bound = new Promise<void>((r) => setTimeout(r, DRAIN_AFTER_EXIT_MS).unref());
        void Promise.race([drained, bound]).then(() => {
          // What the group left behind may keep the pipes open; it must not keep Node alive.
          (stdout as Readable & { unref?: () => void }).unref?.();
          (stderr as Readable & { unref?: () => void }).unref?.();
          child.unref();
          resolve({ exitCode: code, ...(signal ? { signal } : {}) });
        });
      });
    });

    return {
      exited,
      kill: async (signal) => signalGroup(pid, signal),
      write: (input, writeOptions) => writeInput(stdin, input, writeOptions),
      closeStdin: async () => {
        stdin?.end();
      },
    };
  }
}
