import type { ProcessInput } from '../contract/sandbox-exec.js';
import type { ProcessSignal } from '../contract/sandbox-processes.js';

/** Where a launched process's output goes, raw, as the backend delivers it. */
export interface ProcessSink {
  stdout(chunk: Uint8Array | string): void;
  stderr(chunk: Uint8Array | string): void;
}

export interface LaunchedExit {
  readonly exitCode: number | null;
  readonly signal?: string;
}

/** One process a backend started; `ProcessTable` owns everything else about it. */
export interface LaunchedProcess {
  /**
   * Settles once, when the process has ended and its output has been delivered to the sink. It
   * must not reject: a backend that loses track of the process resolves with `exitCode: null`.
   */
  readonly exited: Promise<LaunchedExit>;
  /** Signals the process (and what it started, where the backend can). */
  kill(signal: ProcessSignal): Promise<void>;
  /** Present when the backend can feed standard input. */
  write?(input: ProcessInput): Promise<void>;
  closeStdin?(): Promise<void>;
}

export interface LaunchOptions {
  readonly env?: Readonly<Record<string, string>>;
  readonly cwd?: string;
}

/**
 * The hook a provider implements to get `sandbox.processes`: start one command in the
 * background and report its output and end. Bounds, ids, polling, timeouts and cleanup are
 * `ProcessTable`'s, the same for every provider.
 */
export interface ProcessLauncher {
  launch(command: string, options: LaunchOptions, sink: ProcessSink): Promise<LaunchedProcess>;
}
