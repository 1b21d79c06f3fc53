import type { ProcessSignal } from '@sbx/core';
import type {
  LaunchOptions,
  LaunchedExit,
  LaunchedProcess,
  ProcessLauncher,
  ProcessSink,
} from '@sbx/core/provider-kit';
import type { E2BCommandOptions, E2BCommandResult, E2BRemoteSandbox } from './e2b-client.js';
import { commandExitResult } from './e2b-errors.js';

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
    await client.commands.sendStdin(handle.pid, stdin);
    await client.commands.closeStdin(handle.pid);
    return await handle.wait();
  } finally {
    signal?.removeEventListener('abort', onAbort);
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
}

/**
 * Background processes on the SDK's background commands: `run({ background: true, stdin: true })`,
 * `sendStdin` / `closeStdin`, and `kill`. The SDK only sends SIGKILL; other signals are sent with
 * `kill -s` inside the VM, to the command's process group when it leads one, else to its pid.
 */
export class E2BProcessLauncher implements ProcessLauncher {
  constructor(private readonly hooks: E2BLaunchHooks) {}

  async launch(
    command: string,
    options: LaunchOptions,
    sink: ProcessSink,
  ): Promise<LaunchedProcess> {
    const client = this.hooks.client();
    const handle = await client.commands.run(command, {
      background: true,
      stdin: true,
      // 0: no limit; the process table applies the caller's own limit.
      timeoutMs: 0,
      ...(options.env ? { envs: { ...options.env } } : {}),
      ...(options.cwd ? { cwd: this.hooks.resolvePath(options.cwd) } : {}),
      onStdout: (d) => sink.stdout(d),
      onStderr: (d) => sink.stderr(d),
    });
    let killedWith: ProcessSignal | undefined;
    const exited = handle.wait().then(
      (result): LaunchedExit => ({ exitCode: result.exitCode }),
      (error: unknown): LaunchedExit => {
        const ended = commandExitResult(error);
        if (ended) {
          return {
            exitCode: killedWith ? null : ended.exitCode,
            ...(killedWith ? { signal: killedWith } : {}),
          };
        }
        return { exitCode: null, ...(killedWith ? { signal: killedWith } : {}) };
      },
    );
    const pid = handle.pid;
    return {
      exited,
      kill: async (signal) => {
        killedWith = signal;
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
    };
  }
}
