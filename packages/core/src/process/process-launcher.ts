import type { ProcessInput } from '../contract/sandbox-exec.js';
import type { ProcessSignal } from '../contract/sandbox-processes.js';

/** Where a launched process's output goes, raw, as the backend delivers it. */
export interface ProcessSink {
  stdout(chunk: Uint8Array | string): void;
  stderr(chunk: Uint8Array | string): void;
}

/** How the process table bounds a write to a process's input. */
export interface InputWriteOptions {
  /** Aborted when the caller stops waiting: send no more of the input. */
  readonly signal?: AbortSignal;
  /** Told the running total of bytes the process has taken, each time it grows. */
  readonly onAccepted?: (bytes: number) => void;
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
  /**
   * The backend's own name for the process, when another client of the same sandbox can find it
   * by that name (`ProcessLauncher.attach`). `ProcessTable` then uses it as the process id, so an
   * id handed out by one gateway instance means the same process to every other.
   */
  readonly id?: string;
  /** Signals the process (and what it started, where the backend can). */
  kill(signal: ProcessSignal): Promise<void>;
  /**
   * Present when the backend can feed standard input. Resolves once the input was taken; a
   * backend that can tell reports progress through `onAccepted` and stops at `signal`.
   */
  write?(input: ProcessInput, options?: InputWriteOptions): Promise<void>;
  closeStdin?(): Promise<void>;
}

/** A process another client started, found by its id; see `ProcessLauncher.attach`. */
export interface AttachedProcess extends LaunchedProcess {
  readonly id: string;
  readonly command: string;
  /** Stops following the process without signalling it. */
  detach(): Promise<void>;
}

export interface LaunchOptions {
  readonly env?: Readonly<Record<string, string>>;
  readonly cwd?: string;
  /**
   * The limit the caller enforces itself (it kills the process then). A backend may also hand it
   * to the remote side as a backstop, so a command outlives neither a lost connection nor a
   * gateway that went away; absent for a background process without a limit.
   */
  readonly timeoutMs?: number;
}

/**
 * The hook a provider implements to get `sandbox.processes`: start one command in the
 * background and report its output and end. Bounds, ids, polling, timeouts and cleanup are
 * `ProcessTable`'s, the same for every provider.
 */
export interface ProcessLauncher {
  /**
   * True when the launcher already paces its output against the shared `OutputPacer` (a local
   * pipe it can pause). Otherwise the process table and `execViaLauncher` pace what reaches
   * output listeners themselves (`PacedListener`), since a backend's callbacks cannot be paused.
   */
  readonly pacesOutput?: boolean;
  launch(command: string, options: LaunchOptions, sink: ProcessSink): Promise<LaunchedProcess>;
  /**
   * Optional: how this backend shows a process's output text (the host provider masks host
   * paths and redacts the call's secrets), asked once before `launch` with the same options. The
   * sink then gets raw bytes, and the table applies the rewrite a line at a time to the output it
   * still keeps when it is read (and to what listeners stream), so output dropped unread is never
   * decoded nor rewritten.
   */
  outputRewrite?(options: LaunchOptions): Promise<((text: string) => string) | undefined>;
  /**
   * Optional: connects to a running background process that another client of this sandbox
   * started (another gateway instance, or this one before a restart), by the id that client
   * handed out. Output from the moment of attaching goes to `sink`; what the process printed
   * before is not available. Resolves `undefined` when no such background process is running.
   * `id` comes from a caller and must be validated before it reaches the backend.
   */
  attach?(id: string, sink: ProcessSink): Promise<AttachedProcess | undefined>;
  /** Optional, with `attach`: ids of the background processes running in the sandbox now. */
  discover?(): Promise<readonly string[]>;
}
