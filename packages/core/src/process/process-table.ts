import { systemClock, type Clock, type ClockTimer } from '../async/clock.js';
import { validateExtraEnv } from '../config/env-policy.js';
import type { ProcessInput } from '../contract/sandbox-exec.js';
import {
  PROCESS_SIGNALS,
  type ProcessExit,
  type ProcessHandle,
  type ProcessInfo,
  type ProcessOutput,
  type ProcessOutputOptions,
  type ProcessSignal,
  type ProcessStartOptions,
  type ProcessWriteOptions,
  type SandboxProcesses,
} from '../contract/sandbox-processes.js';
import { InvalidArgumentError } from '../errors/errors.js';
import { ProcessNotFoundError, ProcessStateError } from '../errors/process-errors.js';
import { CapabilityNotSupportedError } from '../errors/capability-errors.js';
import { silentLogger, type Logger } from '../logging/logger.js';
import { DEFAULT_PROCESS_OUTPUT_BYTES, OutputRing } from './output-ring.js';
import type {
  AttachedProcess,
  LaunchedExit,
  LaunchedProcess,
  ProcessLauncher,
} from './process-launcher.js';
import { assertCommandText, assertProcessTimeout } from './process-limits.js';
import { sharedRetainedOutput, type RetainedOutput } from './retained-output.js';
import { Utf8Listener } from './utf8-listener.js';
import { sharedOutputPacer, type OutputPacer } from './output-pacer.js';
import { PacedListener, type PacedTarget } from './paced-listener.js';
import { writeProcessInput } from './process-input.js';
import { infoOf, sinkInto, waitFor, type ProcessRecord } from './process-record.js';

export const DEFAULT_MAX_RUNNING_PROCESSES = 16;
export const DEFAULT_KEPT_ENDED_PROCESSES = 32;
/** Longer ids are never a process's: they are refused before reaching the backend. */
const MAX_ID_LENGTH = 64;
/** How long `close()` waits for killed processes to report their end. */
const CLOSE_WAIT_MS = 5_000;

export interface ProcessTableOptions {
  readonly launcher: ProcessLauncher;
  /** Bytes of output each process keeps for `output()`. Default 1 MiB. */
  readonly outputBytes?: number;
  /**
   * The budget ended processes' output counts against, across every table that shares it
   * (default: one for the whole Node process, 64 MiB; the oldest ended output is freed first).
   */
  readonly retainedOutput?: RetainedOutput;
  /** Processes running at once per sandbox; a start beyond it is refused. Default 16. */
  readonly maxRunning?: number;
  /** Ended processes `list()` / `get()` still know. Default 32 (oldest forgotten first). */
  readonly keepEnded?: number;
  /** Whether the launcher's processes take standard input. */
  readonly stdin: boolean;
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** Names the sandbox in log lines. */
  readonly sandboxId?: string;
  /** Paces listeners' output when the launcher does not (default: the shared pacer). */
  readonly pacer?: OutputPacer;
}

/**
 * `SandboxProcesses` over a provider's `ProcessLauncher`: ids, the bounded output buffer of each
 * process, its optional time limit, the running-process limit, and cleanup when the sandbox
 * client closes. One implementation, so every provider bounds and reports the same way.
 *
 * One concept, kept whole: the table's entries and the transitions between them (started,
 * attached, exited, killed, timed out, closed) share the same bookkeeping, and the races the
 * lifecycle guards close (an attach landing after close, a kill after exit) are readable only
 * with every transition in view.
 */
export class ProcessTable implements SandboxProcesses {
  readonly #options: ProcessTableOptions;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #records = new Map<string, ProcessRecord>();
  readonly #ended: ProcessRecord[] = [];
  readonly #attaching = new Map<string, Promise<ProcessRecord | undefined>>();
  readonly #retained: RetainedOutput;
  #next = 0;
  #inFlight = 0;
  /** Launches in flight, each settling once its process has ended (at once if it failed). */
  readonly #launching = new Set<Promise<unknown>>();
  /** Moved on by every `killRunning()`: a launch begun before it is killed as it lands. */
  #generation = 0;
  #closed = false;

  constructor(options: ProcessTableOptions) {
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    this.#logger = options.logger ?? silentLogger;
    this.#retained = options.retainedOutput ?? sharedRetainedOutput;
  }

  get closed(): boolean {
    return this.#closed;
  }

  async start(command: string, options: ProcessStartOptions = {}): Promise<ProcessHandle> {
    assertCommandText(command);
    if (options.label !== undefined) assertCommandText(options.label);
    validateExtraEnv(options.env);
    if (options.timeoutMs !== undefined) assertProcessTimeout(options.timeoutMs);
    if (this.#closed) throw new ProcessStateError('The sandbox client is closed');
    this.#assertRoom();
    let id = 'launching';
    const report = (error: unknown): void =>
      this.#logger.warn('a process output listener threw; it gets no more output', {
        sandboxId: this.#options.sandboxId,
        processId: id,
        error: error instanceof Error ? error.message : String(error),
      });
    const launchOptions = {
      ...(options.env ? { env: options.env } : {}),
      ...(options.cwd ? { cwd: options.cwd } : {}),
    };
    let ring: OutputRing;
    let out: PacedTarget;
    let err: PacedTarget;
    // The place is held from the check until the record is in the table, in one continuation:
    // a start reacting to the launch's settlement must see this process counted.
    this.#inFlight += 1;
    // A `killRunning()` (a release ending the turn) cannot see a process still launching: it
    // waits for `landing` instead, and the process is killed as it lands.
    const generation = this.#generation;
    let landed: (ended: Promise<unknown> | undefined) => void = () => undefined;
    const landing = new Promise<unknown>((resolve) => {
      landed = resolve;
    });
    this.#launching.add(landing);
    let launched: LaunchedProcess;
    let unlisten = (): void => undefined;
    try {
      // How the launcher shows output (masked, redacted): applied to what is kept, when read.
      const rewrite = await this.#options.launcher.outputRewrite?.(launchOptions);
      ring = this.#ring(rewrite);
      const outText = new Utf8Listener(options.onStdout, report, rewrite);
      const errText = new Utf8Listener(options.onStderr, report, rewrite);
      out = this.#paced(outText, options.onStdout);
      err = this.#paced(errText, options.onStderr);
      const paced = [out, err];
      unlisten = stopListening(options.listenUntil, () => {
        outText.detach();
        errText.detach();
        // Output nobody listens to must not spend the credit every tenant's listeners share.
        for (const target of paced) if (target instanceof PacedListener) target.discard();
      });
      launched = await this.#options.launcher.launch(
        command,
        launchOptions,
        sinkInto(ring, out, err),
      );
    } catch (error) {
      unlisten();
      landed(undefined);
      throw error;
    } finally {
      this.#inFlight -= 1;
      this.#launching.delete(landing);
    }
    id = launched.id ?? `p${++this.#next}`;
    const record = this.#track(id, options.label ?? command, ring, launched, undefined, out, err);
    landed(record.ended);
    // A signal may outlive many processes (a session's): each ended one lets go of it.
    void record.ended.then(unlisten, unlisten);
    if (options.timeoutMs !== undefined) {
      record.timer = this.#clock.setTimeout(() => {
        record.timedOut = true;
        return this.#kill(record, 'SIGKILL');
      }, options.timeoutMs);
    }
    if (this.#closed || this.#generation !== generation) {
      // close() or killRunning() ran while the launch was in flight: the client or the turn that
      // started this process is over, and nobody is left to stop it.
      await this.#kill(record, 'SIGKILL');
    }
    return this.#handle(record);
  }

  /**
   * Running and recently ended processes. With a launcher that can attach, the background
   * processes other clients of the sandbox started are attached first (up to the running limit;
   * the rest are left out with a log line), so they can be polled and killed from here too.
   */
  async list(): Promise<ProcessInfo[]> {
    const discover = this.#options.launcher.discover;
    if (discover !== undefined && !this.#closed) {
      const ids = await discover.call(this.#options.launcher);
      const unknown = ids.filter((id) => typeof id === 'string' && !this.#records.has(id));
      for (const [index, id] of unknown.entries()) {
        if (this.#running() >= this.#limit()) {
          this.#logger.warn('background processes of other clients were left unattached', {
            sandboxId: this.#options.sandboxId,
            limit: this.#limit(),
            unattached: unknown.length - index,
          });
          break;
        }
        await this.#attach(id);
      }
    }
    return [...this.#records.values()].map((r) => infoOf(r));
  }

  /**
   * The process of `id`: one this client started or attached, else (with a launcher that can
   * attach) a background process another client of the sandbox started, attached now.
   */
  async get(id: string): Promise<ProcessHandle | undefined> {
    if (typeof id !== 'string') return undefined;
    const record = this.#records.get(id) ?? (await this.#attach(id));
    return record ? this.#handle(record) : undefined;
  }

  /** The process of `id`, or `ProcessNotFoundError`. */
  async require(id: string): Promise<ProcessHandle> {
    const handle = await this.get(id);
    if (!handle) throw new ProcessNotFoundError(String(id).slice(0, 64));
    return handle;
  }

  /**
   * Kills every running process this client started (`SIGKILL`), each one still launching as it
   * lands, lets go of the ones it only attached, and refuses new ones; waits a bounded time for
   * the ends to be reported. Idempotent.
   */
  async close(): Promise<void> {
    this.#closed = true;
    await this.killRunning();
  }

  /**
   * Kills every running process this client started (`SIGKILL`), and each one still launching as
   * it lands, and waits a bounded time for their ends to be reported; the table stays open (a
   * provider that keeps the sandbox between turns ends its processes at release this way). A
   * process another client started and this one only attached is that client's: it is detached
   * and forgotten here, not signalled, so closing one client never kills what another still runs
   * (and polls).
   */
  async killRunning(): Promise<void> {
    this.#generation += 1;
    const launching = [...this.#launching];
    const live = [...this.#records.values()].filter((r) => r.exit === undefined);
    await Promise.all(live.filter((r) => r.attached !== undefined).map((r) => this.#letGo(r)));
    const running = live.filter((r) => r.attached === undefined);
    await Promise.all(running.map((r) => this.#kill(r, 'SIGKILL')));
    if (running.length === 0 && launching.length === 0) return this.#freeEndedOutput();
    let timer: ClockTimer | undefined;
    const gaveUp = new Promise<'timeout'>((resolve) => {
      timer = this.#clock.setTimeout(() => resolve('timeout'), CLOSE_WAIT_MS);
    });
    const all = Promise.all([...running.map((r) => r.ended), ...launching]).then(
      () => 'ended' as const,
    );
    const outcome = await Promise.race([all, gaveUp]);
    if (timer) this.#clock.clearTimeout(timer);
    if (outcome === 'timeout') {
      this.#logger.warn('background processes did not report their end after a kill', {
        sandboxId: this.#options.sandboxId,
        processIds: running.filter((r) => r.exit === undefined).map((r) => r.id),
        launchesInFlight: launching.length,
      });
    }
    this.#freeEndedOutput();
  }

  /**
   * At the end of a turn (release, close) the output of ended processes goes: a cached sandbox
   * client must not hold it until its next turn, or for good.
   */
  #freeEndedOutput(): void {
    for (const record of this.#records.values()) {
      if (record.exit !== undefined) this.#freeOutput(record);
    }
  }

  #ring(rewrite: ((text: string) => string) | undefined): OutputRing {
    return new OutputRing({
      capacity: this.#options.outputBytes ?? DEFAULT_PROCESS_OUTPUT_BYTES,
      ...(rewrite ? { rewrite } : {}),
    });
  }

  /**
   * What a listener gets from a launcher that does not pace its own output: the same work per turn
   * of the loop as a paced local pipe. Without a listener nothing is decoded, so nothing to pace.
   */
  #paced(target: Utf8Listener, listener: unknown): PacedTarget {
    if (listener === undefined || this.#options.launcher.pacesOutput === true) return target;
    return new PacedListener(target, { pacer: this.#options.pacer ?? sharedOutputPacer });
  }

  /** Running processes, and launches and attaches in flight (each will be one). */
  #running(): number {
    return [...this.#records.values()].filter((r) => r.exit === undefined).length + this.#inFlight;
  }

  /** The output of a process nobody reads here any more goes (its reader learns it was dropped). */
  #freeOutput(record: ProcessRecord): void {
    record.ring.clear();
    this.#retained.drop(record.ring);
  }

  /** Stops following a process another client started; it keeps running there. */
  async #letGo(record: ProcessRecord): Promise<void> {
    record.detached = true;
    this.#freeOutput(record);
    // Called synchronously on a snapshot of the table: the id still names this record.
    this.#records.delete(record.id);
    await this.#detach(record.id, record.attached);
  }

  async #detach(id: string, attached: AttachedProcess | undefined): Promise<void> {
    await attached?.detach().catch((error: unknown) =>
      this.#logger.warn('detaching an attached process failed', {
        sandboxId: this.#options.sandboxId,
        processId: id,
        error: error instanceof Error ? error.message : String(error),
      }),
    );
  }

  #limit(): number {
    return this.#options.maxRunning ?? DEFAULT_MAX_RUNNING_PROCESSES;
  }

  #assertRoom(): void {
    const running = this.#running();
    if (running >= this.#limit()) {
      throw new ProcessStateError(
        `${running} background processes are running in this sandbox (the limit is ${this.#limit()}); kill one first`,
      );
    }
  }

  /**
   * Attaches a process another client started. Concurrent calls for one id share one attach, so
   * a process is never attached (and its output streamed) twice.
   */
  #attach(id: string): Promise<ProcessRecord | undefined> {
    const attach = this.#options.launcher.attach;
    if (attach === undefined || this.#closed || id.length === 0 || id.length > MAX_ID_LENGTH) {
      return Promise.resolve(undefined);
    }
    const pending = this.#attaching.get(id);
    if (pending) return pending;
    const attaching = (async () => {
      this.#assertRoom();
      const ring = this.#ring(undefined);
      const out = new Utf8Listener(undefined, () => {});
      const err = new Utf8Listener(undefined, () => {});
      // Counted from the check until recorded, in one continuation (see `start`).
      this.#inFlight += 1;
      let attached: AttachedProcess | undefined;
      try {
        attached = await attach.call(this.#options.launcher, id, sinkInto(ring, out, err));
      } finally {
        this.#inFlight -= 1;
      }
      if (attached === undefined) return undefined;
      if (this.#closed) {
        // close() ran while the attach was in flight: it is another client's process; let go.
        await this.#detach(id, attached);
        return undefined;
      }
      const known = this.#records.get(id);
      if (known) {
        // This client started it meanwhile under the same id: one record per process.
        await this.#detach(id, attached);
        return known;
      }
      return this.#track(id, attached.command, ring, attached, attached, out, err);
    })().finally(() => this.#attaching.delete(id));
    this.#attaching.set(id, attaching);
    return attaching;
  }

  #track(
    id: string,
    command: string,
    ring: OutputRing,
    launched: LaunchedProcess,
    attached: AttachedProcess | undefined,
    out: PacedTarget,
    err: PacedTarget,
  ): ProcessRecord {
    const previous = this.#records.get(id);
    if (previous !== undefined && previous.exit === undefined) {
      this.#logger.error('a process launcher reused the id of a running process', {
        sandboxId: this.#options.sandboxId,
        processId: id,
      });
    }
    const record: ProcessRecord = {
      id,
      command,
      startedAt: this.#clock.now(),
      ring,
      launched,
      attached,
      ended: undefined as unknown as Promise<ProcessExit>,
      exit: undefined,
      endedAt: undefined,
      stdinClosed: false,
      timer: undefined,
      timedOut: false,
      detached: false,
    };
    (record as { ended: Promise<ProcessExit> }).ended = launched.exited.then(
      (exit) => this.#finish(record, exit, out, err),
      (error: unknown) => {
        // The launcher contract says it never rejects; a bug there must not strand the waiters.
        this.#logger.error('a process launcher rejected its exit promise', {
          sandboxId: this.#options.sandboxId,
          processId: id,
          error: error instanceof Error ? error.message : String(error),
        });
        return this.#finish(record, { exitCode: null }, out, err);
      },
    );
    // A backend id of an ended process can come back (a pid the VM reused): the new process
    // takes the name, and the ended one is forgotten.
    this.#records.set(id, record);
    return record;
  }

  #finish(record: ProcessRecord, exit: LaunchedExit, out: PacedTarget, err: PacedTarget) {
    if (record.timer) this.#clock.clearTimeout(record.timer);
    out.end();
    err.end();
    const result: ProcessExit = {
      exitCode: exit.exitCode,
      ...(exit.signal !== undefined ? { signal: exit.signal } : {}),
      timedOut: record.timedOut,
    };
    record.exit = result;
    record.endedAt = this.#clock.now();
    record.ring.seal();
    // A process this client let go of is no longer in the table; its end is another client's.
    if (record.detached) return result;
    this.#ended.push(record);
    this.#retained.keep(record.ring);
    const keep = this.#options.keepEnded ?? DEFAULT_KEPT_ENDED_PROCESSES;
    while (this.#ended.length > keep) {
      const forgotten = this.#ended.shift() as ProcessRecord;
      this.#freeOutput(forgotten);
      // Its id may name a newer process by now (see `#track`).
      if (this.#records.get(forgotten.id) === forgotten) this.#records.delete(forgotten.id);
    }
    return result;
  }

  /**
   * Signals a running process. A failure is logged; with `rethrow` (a caller's own kill) it also
   * reaches the caller, unless the process ended meanwhile (then the kill had nothing to do).
   */
  async #kill(record: ProcessRecord, signal: ProcessSignal, rethrow = false): Promise<void> {
    if (record.exit !== undefined) return;
    try {
      await record.launched.kill(signal);
    } catch (error) {
      this.#logger.warn('killing a background process failed', {
        sandboxId: this.#options.sandboxId,
        processId: record.id,
        signal,
        error: error instanceof Error ? error.message : String(error),
      });
      if (rethrow && record.exit === undefined) throw error;
    }
  }

  #handle(record: ProcessRecord): ProcessHandle {
    return {
      id: record.id,
      command: record.command,
      info: () => infoOf(record),
      wait: (options = {}) => waitFor(record, options, this.#clock),
      kill: async (signal: ProcessSignal = 'SIGTERM') => {
        if (!PROCESS_SIGNALS.includes(signal)) {
          throw new InvalidArgumentError(
            `signal must be one of ${PROCESS_SIGNALS.join(', ')}, got ${String(signal).slice(0, 32)}`,
          );
        }
        await this.#kill(record, signal, true);
      },
      write: (input: ProcessInput, options?: ProcessWriteOptions) =>
        writeProcessInput(record, input, options, {
          stdin: this.#options.stdin,
          clock: this.#clock,
          logger: this.#logger,
          sandboxId: this.#options.sandboxId,
        }),
      closeStdin: async () => {
        const close = record.launched.closeStdin;
        if (!this.#options.stdin || close === undefined) {
          throw new CapabilityNotSupportedError(
            'closeStdin',
            'This sandbox cannot close a process input',
          );
        }
        if (record.stdinClosed || record.exit !== undefined) return;
        record.stdinClosed = true;
        await close.call(record.launched);
      },
      output: async (options: ProcessOutputOptions = {}): Promise<ProcessOutput> => {
        // Status first: output that arrived before the end is all in the ring by then.
        const exit = record.exit;
        await record.ring.settle();
        return {
          ...record.ring.read(options),
          status: exit === undefined ? 'running' : 'exited',
          exitCode: exit?.exitCode ?? null,
        };
      },
    };
  }
}

/**
 * Runs `detach` once `signal` is aborted (at once if it already is); returns what removes it from
 * the signal again.
 */
function stopListening(signal: AbortSignal | undefined, detach: () => void): () => void {
  if (signal === undefined) return () => undefined;
  if (signal.aborted) {
    detach();
    return () => undefined;
  }
  signal.addEventListener('abort', detach, { once: true });
  return () => signal.removeEventListener('abort', detach);
}
