import type { ProcessInput } from '../contract/sandbox-exec.js';
import type { ProcessSignal } from '../contract/sandbox-processes.js';
import type { Logger } from '../logging/logger.js';
import type { LaunchedExit, LaunchedProcess } from './process-launcher.js';

/**
 * What a launcher that runs `sh -lc <script>` on a remote backend needs from its sandbox adapter
 * (BoxLite, Tenki): the adapter keeps the state, the confinement and the failure policy.
 */
export interface ShellLaunchHooks {
  /** Throws the typed "closed" error when the adapter no longer serves commands. */
  assertOpen(): void;
  /** The static environment every command gets (a call's `env` is layered on top). */
  environment(): Readonly<Record<string, string>>;
  /** The shell text that runs `command` in `cwd` (confined and quoted by the adapter). */
  script(command: string, cwd: string | undefined): string;
  /** The typed error for a backend failure; reports a backend that is gone to the provider. */
  failure(error: unknown): Error;
  readonly logger: Logger;
  readonly sandboxId: string;
}

/** A command a remote backend runs, as a launcher sees it once it started. */
export interface RemoteCommandControl {
  /**
   * Settles with the command's status once it has ended and its output was delivered (`null`
   * when the backend reports none); rejects when the transport lost the command before its end.
   */
  readonly ended: Promise<number | null>;
  signal(signal: ProcessSignal): Promise<void>;
  write?(input: ProcessInput): Promise<void>;
  closeStdin?(): Promise<void>;
}

export interface RemoteCommandHooks {
  /** The typed error of a backend failure (a provider also reports a backend that is gone). */
  failure(error: unknown): Error;
  /** Told once when the transport lost the command before its end (a log line). */
  lost(error: Error): void;
}

/**
 * The `LaunchedProcess` of a remote command: every call's failure is the provider's typed error,
 * a lost command ends with no status instead of rejecting, and a command that ends after a
 * signal this client sent, with a status that says so (none, 128 + n, or negative), is reported
 * as ended by that signal.
 */
export function remoteCommandProcess(
  control: RemoteCommandControl,
  hooks: RemoteCommandHooks,
): LaunchedProcess {
  let killedWith: ProcessSignal | undefined;
  const exited = control.ended.then(
    (exitCode): LaunchedExit => {
      const bySignal =
        killedWith !== undefined && (exitCode === null || exitCode >= 128 || exitCode < 0);
      return bySignal ? { exitCode: null, signal: killedWith } : { exitCode };
    },
    (error: unknown): LaunchedExit => {
      hooks.lost(hooks.failure(error));
      return { exitCode: null, ...(killedWith ? { signal: killedWith } : {}) };
    },
  );
  const call = async (run: () => Promise<void>): Promise<void> => {
    try {
      await run();
    } catch (error) {
      throw hooks.failure(error);
    }
  };
  const { write, closeStdin } = control;
  return {
    exited,
    kill: (signal) =>
      call(() => {
        killedWith = signal;
        return control.signal(signal);
      }),
    ...(write ? { write: (input: ProcessInput) => call(() => write.call(control, input)) } : {}),
    ...(closeStdin ? { closeStdin: () => call(() => closeStdin.call(control)) } : {}),
  };
}

/** A limit in milliseconds as the whole seconds a remote backend takes (at least 1, rounded up). */
export function limitSeconds(timeoutMs: number): number {
  return Math.max(1, Math.ceil(timeoutMs / 1000));
}
