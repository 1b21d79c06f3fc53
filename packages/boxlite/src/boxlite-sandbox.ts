import {
  ProcessTable,
  RemoteShellSandbox,
  assertCommandText,
  assertDownloadablePath,
  assertExecSupported,
  assertSandboxFilePath,
  boundedHealthCheck,
  decodeFileText,
  execViaLauncher,
} from '@sbx/core/provider-kit';
import { posix } from 'node:path';
import {
  AbortedError,
  FULL_PROCESS_CAPABILITIES,
  errorMessage,
  isSbxError,
  SandboxRuntimeError,
  shellQuote,
  silentLogger,
  sliceLines,
  systemClock,
  validateExtraEnv,
  withDeadline,
} from '@sbx/core';
import type {
  Clock,
  ExecOptions,
  ExecResult,
  Logger,
  ReadFileOptions,
  SandboxCapabilities,
  SandboxProcesses,
  WriteFileOptions,
} from '@sbx/core';
import { BoxliteProcessLauncher } from './boxlite-processes.js';
import type { BoxliteBoxHandle, BoxliteExecResult } from './boxlite-runtime.js';
import {
  IS_DIRECTORY_MARKER,
  MISSING_MARKER,
  TOO_LARGE_MARKER,
  fileErrorFromStderr,
  tooLargeError,
} from './file-errors.js';
import type { TerminalMarkers } from './terminal-errors.js';
import {
  DEFAULT_RETRYABLE_MARKERS,
  DEFAULT_TERMINAL_MARKERS,
  isTerminalBoxError,
} from './terminal-errors.js';

/** Largest file `downloadFile` (and `readFile`) transfers: 100 MiB. */
export const MAX_TRANSFER_BYTES = 100 * 1024 * 1024;

/**
 * Base64 characters per write command: a multiple of 4 (each chunk decodes on its own) and well
 * under Linux's 128 KiB limit on one argument string.
 */
export const BASE64_CHUNK_CHARS = 60_000;

/** Extra wait beyond the in-VM timeout before sbx gives up on a command (the VM's kill wins). */
export const COMMAND_DEADLINE_GRACE_MS = 5_000;

export const SANDBOX_CLOSED_MESSAGE = 'sandbox has been closed';

export type TerminalFailureListener = (sandbox: BoxliteSandbox, error: unknown) => void;

export interface BoxliteSandboxOptions {
  readonly box: BoxliteBoxHandle;
  /** Static variables for every command; a call's `env` is layered on top. */
  readonly environment?: Readonly<Record<string, string>>;
  /** Default wall clock of `executeCommand` in seconds; `undefined` waits indefinitely. */
  readonly commandTimeoutSeconds?: number | undefined;
  /** Told once when a command fails in a way that means the VM is gone. */
  readonly onTerminalFailure?: TerminalFailureListener;
  /** Marker lists for terminal classification (see `terminal-errors.ts`). */
  readonly terminalMarkers?: Partial<TerminalMarkers>;
  readonly clock?: Clock;
  readonly logger?: Logger;
}

type ExecOutcome = { timedOut: false; result: BoxliteExecResult } | { timedOut: true };

const encoder = new TextEncoder();

/**
 * A `Sandbox` over one BoxLite micro-VM. Every operation is an `exec` in the VM: commands run as
 * `sh -lc <command>`, files travel base64-encoded (byte-exact in both directions, so binary files
 * and CRLF survive and undecodable text is reported as such), and searches run the shared
 * `find`/`grep` protocol of `@sbx/core`, whose parsers filter, order and truncate exactly like the
 * host walkers. Paths are used as given: the VM's root filesystem has `/mnt/user-data`.
 *
 * Failures that mean the VM is gone (see `isTerminalBoxError`) are reported to the provider, which
 * evicts the box so the next acquire creates a fresh one. Errors are thrown as typed `SbxError`s;
 * the tool layer renders them as `Error: <message>`.
 */
export class BoxliteSandbox extends RemoteShellSandbox {
  readonly box: BoxliteBoxHandle;
  readonly #environment: Readonly<Record<string, string>>;
  readonly #commandTimeoutSeconds: number | undefined;
  readonly #onTerminalFailure: TerminalFailureListener | undefined;
  readonly #markers: TerminalMarkers;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #launcher: BoxliteProcessLauncher;
  readonly #processes: ProcessTable;
  #closed = false;
  #stopping: Promise<void> | undefined;

  constructor(id: string, options: BoxliteSandboxOptions) {
    super(id);
    this.box = options.box;
    this.#environment = { ...(options.environment ?? {}) };
    this.#commandTimeoutSeconds = options.commandTimeoutSeconds;
    this.#onTerminalFailure = options.onTerminalFailure;
    this.#markers = {
      terminal: options.terminalMarkers?.terminal ?? DEFAULT_TERMINAL_MARKERS,
      retryable: options.terminalMarkers?.retryable ?? DEFAULT_RETRYABLE_MARKERS,
    };
    this.#clock = options.clock ?? systemClock;
    this.#logger = options.logger ?? silentLogger;
    this.#launcher = new BoxliteProcessLauncher({
      box: this.box,
      assertOpen: () => this.#assertOpen(),
      environment: () => this.#environment,
      script: (command, cwd) => this.commandInCwd(command, cwd),
      failure: (error) => this.#failure(error),
      logger: this.#logger,
      sandboxId: id,
    });
    this.#processes = new ProcessTable({
      launcher: this.#launcher,
      stdin: true,
      clock: this.#clock,
      logger: this.#logger,
      sandboxId: id,
    });
  }

  override get capabilities(): SandboxCapabilities {
    return FULL_PROCESS_CAPABILITIES;
  }

  override get processes(): SandboxProcesses {
    return this.#processes;
  }

  /**
   * Ends the background processes this adapter started; the adapter stays usable (the provider
   * calls it at release, before the box is parked for the thread's next turn).
   */
  endProcesses(): Promise<void> {
    return this.#processes.killRunning();
  }

  /** Kills the background processes this adapter started and refuses new ones. Idempotent. */
  override async close(): Promise<void> {
    await this.#processes.close();
  }

  /** True once the box was stopped (or found dead); every later call fails fast. */
  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Stops the VM. Marks the adapter closed first, so no command starts on a box that is going
   * away. Concurrent calls share one stop; a failed stop may be retried.
   */
  stop(): Promise<void> {
    this.#closed = true;
    // The VM's stop ends every process in it; the table learns it from their streams.
    this.#stopping ??= this.box.stop().catch((error: unknown) => {
      this.#stopping = undefined;
      throw error;
    });
    return this.#stopping;
  }

  /** Marks the adapter closed without touching the VM (it is already gone or owned elsewhere). */
  markClosed(): void {
    this.#closed = true;
  }

  /**
   * `echo ok` with `timeoutSeconds` given both to the VM's exec and to this wait: a VM that stops
   * answering altogether fails the check on time instead of holding the caller (and the
   * per-thread acquire lock it holds) indefinitely. Never throws.
   */
  async healthCheck(timeoutSeconds: number): Promise<boolean> {
    if (this.#closed) return false;
    return boundedHealthCheck(
      async (signal) => {
        const result = await this.box.exec('sh', ['-c', 'echo ok'], this.#environment, {
          timeoutSecs: Math.max(1, Math.ceil(timeoutSeconds)),
          signal,
        });
        return result.exitCode === 0 && result.stdout.includes('ok');
      },
      {
        timeoutSeconds,
        clock: this.#clock,
        logger: this.#logger,
        name: 'BoxLite health check',
        sandboxId: this.id,
      },
    );
  }

  /**
   * On the SDK's streaming execution: output reaches the listeners as the VM sends it, `stdin` is
   * written and closed, and the limit (the call's, else `command_timeout_seconds`) is enforced
   * here and given to the VM as well; sbx stops waiting a grace period after a kill the VM does
   * not answer.
   */
  override async exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    assertCommandText(command);
    assertExecSupported(this.capabilities, options);
    validateExtraEnv(options.env);
    this.#assertOpen();
    const timeoutMs =
      options.timeoutMs ??
      (this.#commandTimeoutSeconds === undefined ? undefined : this.#commandTimeoutSeconds * 1000);
    return execViaLauncher(this.#launcher, command, options, {
      timeoutMs,
      clock: this.#clock,
      logger: this.#logger,
      sandboxId: this.id,
    });
  }

  override async readFile(path: string, options: ReadFileOptions = {}): Promise<string> {
    assertSandboxFilePath(path);
    const bytes = await this.#readBytes(path, 'read');
    return sliceLines(decodeFileText(bytes, path), options);
  }

  override async downloadFile(path: string): Promise<Uint8Array> {
    assertSandboxFilePath(path);
    assertDownloadablePath(path);
    return this.#readBytes(path, 'download');
  }

  override async writeFile(
    path: string,
    content: string,
    options: WriteFileOptions = {},
  ): Promise<void> {
    assertSandboxFilePath(path);
    await this.#writeBytes(path, encoder.encode(content), options.append ?? false, 'write');
  }

  override async updateFile(path: string, content: Uint8Array): Promise<void> {
    assertSandboxFilePath(path);
    await this.#writeBytes(path, content, false, 'update');
  }

  #assertOpen(): void {
    // A closed box is an expected state (evicted, shut down), not an incident: no error log.
    if (this.#closed) throw new SandboxRuntimeError(SANDBOX_CLOSED_MESSAGE);
  }

  /**
   * One `sh` exec with the failure handling every operation shares: the in-VM timeout and the wait
   * are bounded together, and a failure that means the VM is gone is reported before it is thrown.
   */
  async #exec(
    shellArgs: readonly string[],
    env: Readonly<Record<string, string>>,
    timeoutSeconds: number | undefined,
    signal?: AbortSignal,
  ): Promise<ExecOutcome> {
    this.#assertOpen();
    const controller = new AbortController();
    const execOptions =
      timeoutSeconds === undefined
        ? { signal: controller.signal }
        : { timeoutSecs: Math.max(1, Math.ceil(timeoutSeconds)), signal: controller.signal };
    try {
      const outcome = await withDeadline(this.box.exec('sh', shellArgs, env, execOptions), {
        clock: this.#clock,
        ms:
          timeoutSeconds === undefined
            ? undefined
            : timeoutSeconds * 1000 + COMMAND_DEADLINE_GRACE_MS,
        signal,
        controller,
        logger: this.#logger,
        label: 'exec',
      });
      return outcome.timedOut ? { timedOut: true } : { timedOut: false, result: outcome.value };
    } catch (error) {
      if (isSbxAbort(error)) throw error;
      throw this.#failure(error);
    }
  }

  /**
   * The typed error of a runtime failure. One that means the VM is gone is logged and reported to
   * the provider (once), which evicts the box.
   */
  #failure(error: unknown): Error {
    if (isSbxError(error)) return error;
    const message = errorMessage(error);
    if (!this.#closed && isTerminalBoxError(error, this.#markers)) {
      this.#logger.warn('BoxLite box is unreachable; evicting it', {
        sandboxId: this.id,
        error: message,
      });
      this.#closed = true;
      this.#onTerminalFailure?.(this, error);
    }
    return new SandboxRuntimeError(message, { cause: error });
  }

  async #script(script: string, signal?: AbortSignal): Promise<BoxliteExecResult> {
    const outcome = await this.#exec(['-c', script], this.#environment, undefined, signal);
    // Without a timeout the wait cannot time out; the narrowing is for the type checker.
    if (outcome.timedOut) throw new SandboxRuntimeError('sandbox command timed out');
    return outcome.result;
  }

  async #readBytes(path: string, operation: string): Promise<Uint8Array> {
    const p = shellQuote(path);
    const script = [
      `P=${p}`,
      `if [ -d "$P" ]; then echo ${IS_DIRECTORY_MARKER} >&2; exit 1; fi`,
      `if [ ! -e "$P" ] && [ ! -L "$P" ]; then echo ${MISSING_MARKER} >&2; exit 1; fi`,
      'S=$(wc -c < "$P") || exit 1',
      `if [ "$S" -gt ${MAX_TRANSFER_BYTES} ]; then echo "${TOO_LARGE_MARKER}:$S" >&2; exit 1; fi`,
      'base64 < "$P"',
    ].join('\n');
    const result = await this.#script(script);
    if (result.exitCode !== 0) {
      const large = new RegExp(`${TOO_LARGE_MARKER}:(\\d+)`).exec(result.stderr);
      if (large) throw tooLargeError(path, Number(large[1]), MAX_TRANSFER_BYTES);
      throw fileErrorFromStderr(result.stderr, path, operation);
    }
    return new Uint8Array(Buffer.from(result.stdout.replace(/\s+/g, ''), 'base64'));
  }

  async #writeBytes(
    path: string,
    bytes: Uint8Array,
    append: boolean,
    operation: string,
  ): Promise<void> {
    const p = shellQuote(path);
    const parent = posix.dirname(path);
    const encoded = Buffer.from(bytes).toString('base64');
    const steps: string[] = [];
    if (encoded.length === 0) steps.push(`: ${append ? '>>' : '>'} "$P"`);
    for (let at = 0; at < encoded.length; at += BASE64_CHUNK_CHARS) {
      const chunk = encoded.slice(at, at + BASE64_CHUNK_CHARS);
      steps.push(`printf %s '${chunk}' | base64 -d ${append || at > 0 ? '>>' : '>'} "$P"`);
    }
    // One exec per chunk keeps every command line under the argument limit; the first one also
    // creates the parent directories.
    for (const [index, step] of steps.entries()) {
      const prefix = index === 0 ? `mkdir -p -- ${shellQuote(parent)} && ` : '';
      const result = await this.#script(`P=${p}\n${prefix}${step}`);
      if (result.exitCode !== 0) throw fileErrorFromStderr(result.stderr, path, operation);
    }
  }

  protected async runSearch(command: string): Promise<string> {
    return (await this.#script(command)).stdout;
  }
}

function isSbxAbort(error: unknown): boolean {
  return AbortedError.is(error);
}
