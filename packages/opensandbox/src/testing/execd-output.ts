import type { OpenSandboxExecution } from '../opensandbox-sdk.js';

/**
 * How execd turns a command's output into stream events, reimplemented for the test doubles (the
 * in-memory fake SDK and the stand-in server) so both hand the adapter exactly what a real execd
 * would: execd tails the output file and emits one event per line, without the terminator; `\n`,
 * `\r` and `\r\n` all end a line; an empty line is emitted as the text `"\n"`; a final line
 * without a terminator is emitted when the command ends.
 */
export class ExecdLineSplitter {
  #pending = '';
  #lastWasCr = false;

  /** Lines completed by `chunk`. */
  push(chunk: string): string[] {
    const lines: string[] = [];
    for (const ch of chunk) {
      if (ch === '\n' || ch === '\r') {
        if (this.#pending.length > 0) {
          lines.push(this.#pending);
          this.#pending = '';
        } else if (!(ch === '\n' && this.#lastWasCr)) {
          lines.push('\n');
        }
        this.#lastWasCr = ch === '\r';
        continue;
      }
      this.#lastWasCr = false;
      this.#pending += ch;
    }
    return lines;
  }

  /** The unterminated rest, once the command ended. */
  flush(): string[] {
    if (this.#pending.length === 0) return [];
    const rest = this.#pending;
    this.#pending = '';
    return [rest];
  }
}

export function splitExecdLines(text: string): string[] {
  const splitter = new ExecdLineSplitter();
  return [...splitter.push(text), ...splitter.flush()];
}

/** One execd server stream event (the wire JSON). */
export interface ExecdEvent {
  type: 'init' | 'stdout' | 'stderr' | 'error' | 'execution_complete' | 'ping';
  text?: string;
  timestamp: number;
  execution_time?: number;
  error?: { ename: string; evalue: string; traceback: string[] };
}

/** How a command ended, as execd's runtime sees it (Go's `ExitCode()`: -1 when killed by a signal). */
export interface ExecdCommandEnd {
  readonly exitCode: number;
  /** Go's error text for a failed wait, e.g. `exit status 3` or `signal: killed`. */
  readonly waitError?: string;
  readonly elapsedMs: number;
}

/** The final event of a foreground command: an error carrying the exit status, or completion. */
export function finalEvent(end: ExecdCommandEnd, now = Date.now()): ExecdEvent {
  if (end.exitCode === 0) {
    return { type: 'execution_complete', execution_time: end.elapsedMs, timestamp: now };
  }
  const waitError = end.waitError ?? `exit status ${end.exitCode}`;
  return {
    type: 'error',
    timestamp: now,
    error: { ename: 'CommandExecError', evalue: String(end.exitCode), traceback: [waitError] },
  };
}

/**
 * The `CommandExecution` the SDK builds from these events (its dispatcher accumulates output,
 * keeps the last error, marks completion, and infers the exit code from them).
 */
export function executionFromEvents(events: readonly ExecdEvent[]): OpenSandboxExecution {
  const execution: OpenSandboxExecution = { logs: { stdout: [], stderr: [] }, result: [] };
  for (const event of events) {
    if (event.type === 'stdout') execution.logs.stdout.push({ text: event.text ?? '' });
    else if (event.type === 'stderr') execution.logs.stderr.push({ text: event.text ?? '' });
    else if (event.type === 'execution_complete')
      execution.complete = { executionTimeMs: event.execution_time ?? 0 };
    else if (event.type === 'error' && event.error) {
      execution.error = {
        name: event.error.ename,
        value: event.error.evalue,
        traceback: [...event.error.traceback],
      };
    }
  }
  const value = execution.error?.value.trim();
  execution.exitCode =
    execution.error !== undefined
      ? value !== undefined && /^-?\d+$/.test(value)
        ? Number(value)
        : null
      : execution.complete
        ? 0
        : null;
  return execution;
}

/** stdout/stderr text and how the command ended → the events execd would stream, in order. */
export function commandEvents(
  output: { stdout: string; stderr: string },
  end: ExecdCommandEnd,
  commandId: string,
  now = Date.now(),
): ExecdEvent[] {
  const events: ExecdEvent[] = [{ type: 'init', text: commandId, timestamp: now }];
  for (const text of splitExecdLines(output.stdout))
    events.push({ type: 'stdout', text, timestamp: now });
  for (const text of splitExecdLines(output.stderr))
    events.push({ type: 'stderr', text, timestamp: now });
  events.push(finalEvent(end, now));
  return events;
}

export interface FakeExecutionInit {
  stdout?: string;
  stderr?: string;
  /** `null`: the run reports no exit code (no completion and no integer error value). */
  exitCode?: number | null;
  /** With `exitCode: null`, an error event whose value is not an integer. */
  error?: { name: string; value: string };
}

/** A `CommandExecution` as the SDK would build it from execd's events for this outcome. */
export function fakeExecution(init: FakeExecutionInit = {}): OpenSandboxExecution {
  const exitCode = init.exitCode === undefined ? 0 : init.exitCode;
  const execution = executionFromEvents(
    commandEvents(
      { stdout: init.stdout ?? '', stderr: init.stderr ?? '' },
      { exitCode: exitCode ?? 0, elapsedMs: 1 },
      'scripted',
    ).filter((e) => exitCode !== null || (e.type !== 'error' && e.type !== 'execution_complete')),
  );
  if (exitCode === null && init.error) {
    execution.error = { ...init.error, traceback: [init.error.value] };
    execution.exitCode = null;
  }
  return execution;
}
