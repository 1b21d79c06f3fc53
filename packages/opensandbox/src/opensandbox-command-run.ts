import { AbortedError } from '@sbx/core';
import type { Clock, Logger } from '@sbx/core';
import { COMMAND_TTL_GRACE_SECONDS } from './opensandbox-config.js';
import { exitCodeOf } from './command-output.js';
import type {
  OpenSandboxExecution,
  OpenSandboxHandlers,
  OpenSandboxRemote,
} from './opensandbox-sdk.js';

export interface RunOutcome {
  readonly execution: OpenSandboxExecution;
  readonly timedOut: boolean;
}

const EMPTY_EXECUTION: OpenSandboxExecution = {
  logs: { stdout: [], stderr: [] },
  result: [],
  exitCode: null,
};

export function abortError(signal: AbortSignal): AbortedError {
  return new AbortedError(undefined, { cause: signal.reason });
}

/** Where a command runs, and how its failures are reported. */
export interface RemoteCommandTarget {
  readonly remote: OpenSandboxRemote;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly ids: { readonly sandboxId: string; readonly remoteId: string };
  /** The sandbox's classification of a failed call (terminal, transient, ...). */
  readonly failure: (error: unknown) => Error;
}

export interface RemoteCommandRun {
  readonly command: string;
  readonly timeoutSeconds: number;
  readonly envs: Readonly<Record<string, string>>;
  readonly signal?: AbortSignal | undefined;
  /** Working directory inside the sandbox. */
  readonly cwd?: string | undefined;
  /** Line events as execd streams them. */
  readonly handlers?: OpenSandboxHandlers | undefined;
}

/**
 * One `commands.run`. execd enforces `timeoutSeconds` (it kills the command's process group);
 * this wait gives up `COMMAND_TTL_GRACE_SECONDS` later in case the kill or its report never
 * arrives. execd reports a killed command as exit code -1; after the full limit that is a
 * timeout.
 */
export async function runRemoteCommand(
  on: RemoteCommandTarget,
  { command, timeoutSeconds, envs, signal, cwd, handlers }: RemoteCommandRun,
): Promise<RunOutcome> {
  if (signal?.aborted) throw abortError(signal);
  const controller = new AbortController();
  let deadlinePassed = false;
  const onAbort = (): void => controller.abort(signal?.reason);
  signal?.addEventListener('abort', onAbort, { once: true });
  const timer = on.clock.setTimeout(
    () => {
      deadlinePassed = true;
      controller.abort(new Error('sbx stopped waiting for the command'));
      stopWaiting?.();
    },
    (timeoutSeconds + COMMAND_TTL_GRACE_SECONDS) * 1000,
  );
  const startedAt = on.clock.now();
  let commandId: string | undefined;
  let stopWaiting: (() => void) | undefined;
  // The SDK honours an abort only until the answer's headers arrive; after that the SSE body is
  // read to its end. So the wait stops here on abort, and execd is asked to kill the command.
  const aborted = new Promise<never>((_resolve, reject) => {
    stopWaiting = () => {
      if (commandId !== undefined && on.remote.commands.interrupt) {
        on.remote.commands.interrupt(commandId).catch((error: unknown) =>
          on.logger.warn('could not interrupt an aborted OpenSandbox command', {
            ...on.ids,
            error: error instanceof Error ? error.message : String(error),
          }),
        );
      }
      reject(signal?.aborted ? abortError(signal) : new Error('sbx stopped waiting'));
    };
  });
  aborted.catch(() => {});
  const onStop = (): void => stopWaiting?.();
  signal?.addEventListener('abort', onStop, { once: true });
  try {
    const running = on.remote.commands.run(
      command,
      {
        timeoutSeconds,
        envs: { ...envs },
        ...(cwd !== undefined ? { workingDirectory: cwd } : {}),
      },
      {
        ...handlers,
        onInit: (init) => {
          commandId = init.id;
          return handlers?.onInit?.(init);
        },
      },
      controller.signal,
    );
    running.catch(() => {});
    const execution = await Promise.race([running, aborted]);
    const exitCode = exitCodeOf(execution);
    const killedAtLimit =
      exitCode !== null && exitCode < 0 && on.clock.now() - startedAt >= timeoutSeconds * 1000;
    return { execution, timedOut: killedAtLimit };
  } catch (error) {
    if (signal?.aborted) throw abortError(signal);
    if (deadlinePassed) {
      on.logger.warn('OpenSandbox command outlived its limit; stopped waiting for it', {
        ...on.ids,
        timeoutSeconds,
      });
      return { execution: EMPTY_EXECUTION, timedOut: true };
    }
    throw on.failure(error);
  } finally {
    on.clock.clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
    signal?.removeEventListener('abort', onStop);
  }
}
