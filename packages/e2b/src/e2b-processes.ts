import type { Logger, ProcessSignal } from '@sbx/core';
import { remoteCommandProcess } from '@sbx/core/provider-kit';
import type {
  AttachedProcess,
  LaunchOptions,
  LaunchedProcess,
  ProcessLauncher,
  ProcessSink,
} from '@sbx/core/provider-kit';
import type {
  E2BCommandHandle,
  E2BCommandOptions,
  E2BCommandResult,
  E2BProcessInfo,
  E2BRemoteSandbox,
} from './e2b-client.js';
import { commandExitResult, isCommandTimeoutError } from './e2b-errors.js';

/**
 * A foreground command with standard input: the SDK takes input only for a command started in
 * the background with `stdin: true`, so it is started that way, fed, its input closed, and waited
 * for. An abort kills it (the SDK's kill is SIGKILL).
 */
export async function runWithStdin(
  client: E2BRemoteSandbox,
  command: string,
  options: E2BCommandOptions,
  stdin: string | Uint8Array,
): Promise<E2BCommandResult> {
  const { signal, ...rest } = options;
  const handle = await client.commands.run(command, { ...rest, background: true, stdin: true });
  const onAbort = (): void => void client.commands.kill(handle.pid).catch(() => {});
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    try {
      await client.commands.sendStdin(handle.pid, stdin);
      await client.commands.closeStdin(handle.pid);
    } catch (error) {
      if (!isProcessNotFoundError(error)) throw error;
      return await endedBeforeInput(handle, error);
    }
    return await handle.wait();
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}

/**
 * The input's send heard "process not found": either the command ended before its input was sent
 * (`true` reads none, and envd forgets a process as it exits, so the send races the exit), or envd
 * does not know the process at all. The handle tells which: an end it reports (an exit, or the
 * command's own time limit) means the input was not needed, and that is the result; a handle that
 * fails without one means the process is genuinely missing, and the send's error stands.
 */
async function endedBeforeInput(
  handle: E2BCommandHandle,
  sendError: unknown,
): Promise<E2BCommandResult> {
  try {
    return await handle.wait();
  } catch (waitError) {
    if (commandExitResult(waitError) !== undefined || isCommandTimeoutError(waitError)) {
      throw waitError;
    }
    throw sendError;
  }
}

const SIGNAL_NAMES: Record<ProcessSignal, string> = {
  SIGTERM: 'TERM',
  SIGKILL: 'KILL',
  SIGINT: 'INT',
  SIGHUP: 'HUP',
};

export interface E2BLaunchHooks {
  /** The connected VM, or a typed error when the client is closed or the VM is gone. */
  client(): E2BRemoteSandbox;
  resolvePath(path: string): string;
  /** The typed error for an SDK failure (marks the sandbox dead when the VM is gone). */
  remoteError(error: unknown, operation: string): Error;
  readonly logger: Logger;
}

/**
 * Set in the environment of every background process, so `commands.list()` tells them from the
 * foreground commands and PTY sessions envd also runs.
 */
export const BACKGROUND_PROCESS_ENV = 'SBX_BACKGROUND_PROCESS';
/** The SDK starts every command as `/bin/bash -l -c <command>`; a longer text is cut. */
const MAX_LISTED_COMMAND_CHARS = 4096;
const PROCESS_ID_RE = /^p([1-9][0-9]{0,9})$/;
/** More marked processes than this are not looked at (16 run per client; a few clients). */
const MAX_DISCOVERED = 64;
const MAX_PID = 2 ** 31 - 1;

/** `p<pid>` → pid, for an id a caller passed; anything else is no process of ours. */
export function pidOfProcessId(id: string): number | undefined {
  const match = PROCESS_ID_RE.exec(id);
  const pid = match ? Number(match[1]) : NaN;
  return Number.isSafeInteger(pid) && pid <= MAX_PID ? pid : undefined;
}

/**
 * Background processes on the SDK's background commands: `run({ background: true, stdin: true })`,
 * `sendStdin` / `closeStdin`, and `kill`. The SDK only sends SIGKILL; other signals are sent with
 * `kill -s` inside the VM, to the command's process group when it leads one, else to its pid.
 *
 * A process is named `p<pid>`, envd's own name for it, so another sandbox client (another gateway
 * instance, or this one after a restart) reaches it: `attach` finds it in `commands.list()` and
 * follows it with `commands.connect(pid)`.
 */
export class E2BProcessLauncher implements ProcessLauncher {
  /** What the last `discover` listed, by pid, until attached: one listing per `list()`. */
  #discovered = new Map<number, E2BProcessInfo>();

  constructor(private readonly hooks: E2BLaunchHooks) {}

  async launch(
    command: string,
    options: LaunchOptions,
    sink: ProcessSink,
  ): Promise<LaunchedProcess> {
    const client = this.hooks.client();
    const handle = await client.commands
      .run(command, {
        background: true,
        stdin: true,
        // 0: no limit; the process table applies the caller's own limit.
        timeoutMs: 0,
        envs: { ...(options.env ?? {}), [BACKGROUND_PROCESS_ENV]: '1' },
        ...(options.cwd ? { cwd: this.hooks.resolvePath(options.cwd) } : {}),
        onStdout: (d) => sink.stdout(d),
        onStderr: (d) => sink.stderr(d),
      })
      .catch((error: unknown) => {
        throw this.hooks.remoteError(error, 'process start');
      });
    return { id: `p${handle.pid}`, ...this.#follow(client, handle) };
  }

  async attach(id: string, sink: ProcessSink): Promise<AttachedProcess | undefined> {
    const pid = pidOfProcessId(id);
    if (pid === undefined) return undefined;
    const client = this.hooks.client();
    // `discover` has just listed it when the process table attaches what it discovered; a stale
    // entry is harmless (the connect below finds the process gone).
    const known = this.#discovered.get(pid);
    this.#discovered.delete(pid);
    const listed = known ?? (await this.#backgroundProcesses(client)).find((p) => p.pid === pid);
    if (listed === undefined) return undefined;
    let handle: E2BCommandHandle;
    try {
      handle = await client.commands.connect(pid, {
        timeoutMs: 0,
        onStdout: (d) => sink.stdout(d),
        onStderr: (d) => sink.stderr(d),
      });
    } catch (error) {
      // It ended between the listing and the connect.
      if (isProcessNotFoundError(error)) return undefined;
      throw this.hooks.remoteError(error, 'process attach');
    }
    const command = listed.args[listed.args.length - 1] ?? listed.cmd;
    return {
      id,
      command: command.slice(0, MAX_LISTED_COMMAND_CHARS),
      ...this.#follow(client, handle),
      detach: () => handle.disconnect(),
    };
  }

  async discover(): Promise<readonly string[]> {
    const listed = (await this.#backgroundProcesses(this.hooks.client())).slice(0, MAX_DISCOVERED);
    this.#discovered = new Map(listed.map((p) => [p.pid, p]));
    return listed.map((p) => `p${p.pid}`);
  }

  async #backgroundProcesses(client: E2BRemoteSandbox): Promise<E2BProcessInfo[]> {
    const listed = await client.commands.list().catch((error: unknown) => {
      throw this.hooks.remoteError(error, 'process list');
    });
    return listed.filter(
      (p) =>
        Number.isSafeInteger(p.pid) &&
        p.pid > 0 &&
        p.envs?.[BACKGROUND_PROCESS_ENV] === '1' &&
        Array.isArray(p.args),
    );
  }

  #follow(client: E2BRemoteSandbox, handle: E2BCommandHandle): Omit<LaunchedProcess, 'id'> {
    const pid = handle.pid;
    return remoteCommandProcess(
      {
        ended: handle.wait().then(
          (result) => result.exitCode,
          (error: unknown) => {
            // The SDK rejects a non-zero exit; that is an end, not a lost command.
            const ended = commandExitResult(error);
            if (ended) return ended.exitCode;
            throw error;
          },
        ),
        signal: async (signal) => {
          if (signal === 'SIGKILL') {
            await client.commands.kill(pid);
            return;
          }
          const name = SIGNAL_NAMES[signal];
          await client.commands
            .run(`kill -s ${name} -- -${pid} 2>/dev/null || kill -s ${name} ${pid}`, {
              timeoutMs: 10_000,
            })
            .catch(() => {});
        },
        write: (input) => client.commands.sendStdin(pid, input),
        closeStdin: () => client.commands.closeStdin(pid),
      },
      {
        failure: (error) => this.hooks.remoteError(error, 'process call'),
        lost: (error) =>
          this.hooks.logger.warn('lost an E2B background command before its end', {
            pid,
            error: error.message,
          }),
      },
    );
  }
}

function isProcessNotFoundError(error: unknown): boolean {
  return error instanceof Error && error.name === 'NotFoundError';
}
