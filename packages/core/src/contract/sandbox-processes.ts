import type { OutputListener, ProcessInput } from './sandbox-exec.js';

/**
 * Background processes: commands that outlive the call that started them (dev servers, builds,
 * watchers), which a caller polls, feeds and stops later by id.
 *
 * Lifetime: a process belongs to the sandbox client that started it. `Sandbox.close()` kills what
 * is still running; a provider's `release` / `shutdown` close the client, so a process ends with
 * its sandbox. Ids are unique within one sandbox client and not secrets: every call is made
 * through an authorized sandbox, and a thread sees only its own sandbox's processes.
 *
 * Where the backend names its processes (E2B: `p<pid>`; AIO: the bash session's name), ids are
 * the backend's, and another client of the same sandbox (another gateway instance, or this one
 * after a restart) reaches a running process by its id: `get(id)` and `list()` attach it.
 * Elsewhere ids are the client's own and never reused.
 */

export type ProcessSignal = 'SIGTERM' | 'SIGKILL' | 'SIGINT' | 'SIGHUP';

export const PROCESS_SIGNALS: readonly ProcessSignal[] = ['SIGTERM', 'SIGKILL', 'SIGINT', 'SIGHUP'];

export interface ProcessStartOptions {
  /** Per-process environment overlay. */
  env?: Readonly<Record<string, string>>;
  cwd?: string;
  /**
   * Kill the process after this many milliseconds (default: never; it runs until it exits, is
   * killed, or its sandbox ends).
   */
  timeoutMs?: number;
  /**
   * How `list()`, `info()` and the handle show the command (default: the command itself): a
   * caller that rewrote its user's command before running it (virtual paths made host paths)
   * shows the one its user wrote.
   */
  label?: string;
  /** Output as it is produced, in addition to what the output buffer keeps for `output()`. */
  onStdout?: OutputListener;
  onStderr?: OutputListener;
  /**
   * The listeners get output until this signal is aborted; from then on nothing is decoded,
   * rewritten or delivered for them (a call that returned while its process runs on). The
   * process itself is not affected.
   */
  listenUntil?: AbortSignal;
}

export type ProcessStatus = 'running' | 'exited';

export interface ProcessInfo {
  readonly id: string;
  readonly command: string;
  readonly status: ProcessStatus;
  /** Epoch milliseconds. */
  readonly startedAt: number;
  readonly endedAt?: number;
  /** Present once the process has exited with a status. */
  readonly exitCode: number | null;
  /** The signal that ended it, when one did. */
  readonly signal?: string;
  /** Killed by its own `timeoutMs`. */
  readonly timedOut: boolean;
}

export interface ProcessExit {
  readonly exitCode: number | null;
  readonly signal?: string;
  readonly timedOut: boolean;
}

export interface ProcessOutputOptions {
  /**
   * A cursor from an earlier `output()` (its `cursor`): only output produced after it. Default 0,
   * everything still kept.
   */
  since?: number;
  /** Return at most this many bytes (the oldest first); the cursor says where to go on. */
  maxBytes?: number;
}

export interface ProcessOutput {
  /** Output of both streams after `since`, interleaved in the order it arrived. */
  readonly text: string;
  readonly stdout: string;
  readonly stderr: string;
  /** Pass back as `since` to read only what comes next. */
  readonly cursor: number;
  /**
   * Bytes after `since` that the bounded output buffer had already dropped (oldest output goes
   * first), so the reader knows there is a gap before `text`.
   */
  readonly droppedBytes: number;
  /** More output is kept after `cursor` (the read was cut at `maxBytes`). */
  readonly more: boolean;
  readonly status: ProcessStatus;
  readonly exitCode: number | null;
}

export interface ProcessWriteOptions {
  /**
   * How long to wait for the process to take the input (default 10 s). A process that does not
   * read its input blocks a write once the pipe is full; past this the write fails with
   * `ProcessInputBlockedError`, which says how many bytes were taken.
   */
  timeoutMs?: number;
}

export interface ProcessHandle {
  readonly id: string;
  readonly command: string;
  info(): ProcessInfo;
  /** Resolves when the process ends; with `timeoutMs`, resolves `undefined` if it has not ended. */
  wait(options?: { timeoutMs?: number; signal?: AbortSignal }): Promise<ProcessExit | undefined>;
  /** Signals the process's whole group (default `SIGTERM`). Killing an ended process is a no-op. */
  kill(signal?: ProcessSignal): Promise<void>;
  /**
   * Writes to the process's standard input; resolves once the process has taken all of it, and
   * fails with `ProcessInputBlockedError` when it has not within `timeoutMs`.
   */
  write(input: ProcessInput, options?: ProcessWriteOptions): Promise<void>;
  /** Closes standard input (the process reads EOF). */
  closeStdin(): Promise<void>;
  output(options?: ProcessOutputOptions): Promise<ProcessOutput>;
}

export interface SandboxProcesses {
  start(command: string, options?: ProcessStartOptions): Promise<ProcessHandle>;
  /** Running processes and the most recently ended ones (bounded), oldest first. */
  list(): Promise<ProcessInfo[]>;
  get(id: string): Promise<ProcessHandle | undefined>;
}
