import type { ProcessSignal } from '@sbx/core';
import { limitSeconds, remoteCommandProcess } from '@sbx/core/provider-kit';
import type {
  LaunchOptions,
  ShellLaunchHooks,
  LaunchedProcess,
  ProcessLauncher,
  ProcessSink,
} from '@sbx/core/provider-kit';
import type { BoxliteBoxHandle } from './boxlite-runtime.js';

/** Linux signal numbers, as the SDK's `Execution.signal` takes them. */
const SIGNAL_NUMBERS: Record<ProcessSignal, number> = {
  SIGHUP: 1,
  SIGINT: 2,
  SIGKILL: 9,
  SIGTERM: 15,
};

export interface BoxliteLaunchHooks extends ShellLaunchHooks {
  readonly box: BoxliteBoxHandle;
}

/**
 * Commands on the SDK's streaming executions (`box.exec` → `Execution`): output is read from
 * both streams as the VM sends it, input goes to the execution's stdin, SIGKILL is the SDK's
 * `kill()` and other signals go through `signal(n)`. A limit the caller sets also goes to the VM
 * (whole seconds, rounded up) as a backstop for a gateway that goes away.
 */
export class BoxliteProcessLauncher implements ProcessLauncher {
  constructor(private readonly hooks: BoxliteLaunchHooks) {}

  async launch(
    command: string,
    options: LaunchOptions,
    sink: ProcessSink,
  ): Promise<LaunchedProcess> {
    const hooks = this.hooks;
    hooks.assertOpen();
    const env = { ...hooks.environment(), ...(options.env ?? {}) };
    let sawStderr = false;
    const execution = await hooks.box
      .start('sh', ['-lc', hooks.script(command, options.cwd)], env, {
        ...(options.timeoutMs !== undefined
          ? { timeoutSecs: limitSeconds(options.timeoutMs) }
          : {}),
        onStdout: (text) => sink.stdout(text),
        onStderr: (text) => {
          sawStderr = true;
          sink.stderr(text);
        },
      })
      .catch((error: unknown) => {
        throw hooks.failure(error);
      });
    return remoteCommandProcess(
      {
        ended: execution.ended.then((end) => {
          // The runtime's own account of a failure, when the command said nothing itself.
          if (end.errorMessage && !sawStderr) sink.stderr(end.errorMessage);
          return end.exitCode;
        }),
        signal: (signal) =>
          signal === 'SIGKILL' ? execution.kill() : execution.signal(SIGNAL_NUMBERS[signal]),
        write: (input) => execution.write(input),
        closeStdin: () => execution.closeStdin(),
      },
      {
        failure: hooks.failure,
        lost: (error) =>
          hooks.logger.warn('lost a BoxLite execution before its end', {
            sandboxId: hooks.sandboxId,
            error: error.message,
          }),
      },
    );
  }
}
