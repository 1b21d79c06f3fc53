import type { Clock, ClockTimer } from '../async/clock.js';
import type { ProcessExit, ProcessInfo } from '../contract/sandbox-processes.js';
import type { OutputRing } from './output-ring.js';
import type { AttachedProcess, LaunchedProcess, ProcessSink } from './process-launcher.js';
import { assertProcessTimeout } from './process-limits.js';
import type { PacedTarget } from './paced-listener.js';

/**
 * What the process table knows of one process, from launch (or attach) until it is forgotten, and
 * the reads every handle of it shares: its info, a bounded wait for its end, the sink its output
 * goes through.
 */
export interface ProcessRecord {
  readonly id: string;
  readonly command: string;
  readonly startedAt: number;
  readonly ring: OutputRing;
  readonly launched: LaunchedProcess;
  /** Set when this client attached a process another client started: closing only lets go. */
  readonly attached: AttachedProcess | undefined;
  readonly ended: Promise<ProcessExit>;
  exit: ProcessExit | undefined;
  endedAt: number | undefined;
  stdinClosed: boolean;
  timer: ClockTimer | undefined;
  timedOut: boolean;
  /** No longer followed (let go of by `killRunning` / `close`): its end is not recorded. */
  detached: boolean;
}

export function sinkInto(ring: OutputRing, out: PacedTarget, err: PacedTarget): ProcessSink {
  return {
    stdout: (chunk) => {
      ring.append('stdout', toBuffer(chunk));
      out.write(chunk);
    },
    stderr: (chunk) => {
      ring.append('stderr', toBuffer(chunk));
      err.write(chunk);
    },
  };
}

function toBuffer(chunk: Uint8Array | string): Buffer {
  return typeof chunk === 'string'
    ? Buffer.from(chunk, 'utf8')
    : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
}

export function infoOf(record: ProcessRecord): ProcessInfo {
  const exit = record.exit;
  return {
    id: record.id,
    command: record.command,
    status: exit === undefined ? 'running' : 'exited',
    startedAt: record.startedAt,
    ...(record.endedAt !== undefined ? { endedAt: record.endedAt } : {}),
    exitCode: exit?.exitCode ?? null,
    ...(exit?.signal !== undefined ? { signal: exit.signal } : {}),
    timedOut: record.timedOut,
  };
}

export async function waitFor(
  record: ProcessRecord,
  options: { timeoutMs?: number; signal?: AbortSignal },
  clock: Clock,
): Promise<ProcessExit | undefined> {
  if (record.exit !== undefined) return record.exit;
  if (options.timeoutMs === undefined && options.signal === undefined) return record.ended;
  if (options.timeoutMs !== undefined) assertProcessTimeout(options.timeoutMs, 'wait timeoutMs');
  let timer: ClockTimer | undefined;
  let onAbort: (() => void) | undefined;
  const stop = new Promise<undefined>((resolve) => {
    if (options.timeoutMs !== undefined) {
      timer = clock.setTimeout(() => resolve(undefined), options.timeoutMs);
    }
    if (options.signal) {
      onAbort = () => resolve(undefined);
      if (options.signal.aborted) resolve(undefined);
      else options.signal.addEventListener('abort', onAbort, { once: true });
    }
  });
  try {
    return await Promise.race([record.ended, stop]);
  } finally {
    if (timer) clock.clearTimeout(timer);
    if (onAbort) options.signal?.removeEventListener('abort', onAbort);
  }
}
