import { limitSeconds, remoteCommandProcess } from '@sbx/core/provider-kit';
import type {
  LaunchOptions,
  ShellLaunchHooks,
  LaunchedProcess,
  ProcessLauncher,
  ProcessSink,
} from '@sbx/core/provider-kit';
import type { TenkiProcess, TenkiRemoteSandbox } from './tenki-client.js';

export interface TenkiLaunchHooks extends ShellLaunchHooks {
  readonly remote: TenkiRemoteSandbox;
}

async function pump(stream: AsyncIterable<Uint8Array>, sink: (chunk: Uint8Array) => void) {
  for await (const chunk of stream) sink(chunk);
}

/**
 * Commands on the client's live processes (`start`, where the implementation has it): both
 * output streams are read as they arrive, input goes to `writeStdin`, signals to `kill`. A limit
 * the caller sets also goes to the service (whole seconds, rounded up) as a backstop.
 */
export class TenkiProcessLauncher implements ProcessLauncher {
  constructor(private readonly hooks: TenkiLaunchHooks) {}

  async launch(
    command: string,
    options: LaunchOptions,
    sink: ProcessSink,
  ): Promise<LaunchedProcess> {
    const hooks = this.hooks;
    hooks.assertOpen();
    const start = hooks.remote.start;
    if (start === undefined) throw new Error('this Tenki client cannot start live commands');
    let process: TenkiProcess;
    try {
      process = await start.call(hooks.remote, ['sh', '-lc', hooks.script(command, options.cwd)], {
        env: { ...hooks.environment(), ...(options.env ?? {}) },
        ...(options.timeoutMs !== undefined
          ? { timeoutSeconds: limitSeconds(options.timeoutMs) }
          : {}),
      });
    } catch (error) {
      throw hooks.failure(error);
    }
    return remoteCommandProcess(
      {
        // Both streams at once: a command filling one pipe while the other is not read would stall.
        ended: Promise.all([
          pump(process.stdout, (chunk) => sink.stdout(chunk)),
          pump(process.stderr, (chunk) => sink.stderr(chunk)),
        ])
          .then(() => process.wait())
          .then(({ exitCode }) => exitCode),
        signal: (signal) => process.kill(signal),
        write: (input) =>
          process.writeStdin(typeof input === 'string' ? new TextEncoder().encode(input) : input),
        closeStdin: () => process.closeStdin(),
      },
      {
        failure: hooks.failure,
        lost: (error) =>
          hooks.logger.warn('lost a Tenki command before its end', {
            sandboxId: hooks.sandboxId,
            error: error.message,
          }),
      },
    );
  }
}
