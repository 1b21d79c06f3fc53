import { AbortedError, type ExecOptions, type ExecResult, type Logger } from '@sbx/core';
import { StreamRewriter, Utf8Listener, rewriteInTurns } from '@sbx/core/internal';
import type { PosixRunOptions, PosixRunResult } from './posix-runner.js';
import type { SessionObserver } from './session-observer.js';
import type { SpawnPlan } from './confinement/spawn-plan.js';

/** A host command ready to spawn: shell, translated command, final env and host cwd. */
export interface PreparedHostCommand {
  readonly shell: string;
  readonly command: string;
  readonly env: Record<string, string>;
  readonly cwd?: string;
  /** Told about the shell's session (see `SessionObserver`). */
  readonly session?: SessionObserver;
  /** What to spawn instead of `<shell> -c <command>` (a confined command's entry). */
  readonly plan?: SpawnPlan;
}

/** A listener chain: raw bytes → UTF-8 text → rewritten a line at a time → the caller's listener. */
export function rewritingListener(
  listener: ((text: string) => void) | undefined,
  rewrite: (text: string) => string,
  logger: Logger,
  sandboxId: string,
): { write(chunk: Buffer): void; end(): void } | undefined {
  if (listener === undefined) return undefined;
  const lines = new StreamRewriter(rewrite, listener);
  const decoder = new Utf8Listener(lines.write, (error) =>
    logger.warn('a command output listener threw; it gets no more output', {
      sandboxId,
      error: error instanceof Error ? error.message : String(error),
    }),
  );
  return {
    write: (chunk) => decoder.write(chunk),
    end: () => {
      decoder.end();
      lines.end();
    },
  };
}

/**
 * One host command to completion with its output streamed: listeners see the same masked and
 * redacted text the result carries, line by line as the command prints it.
 */
export async function runHostExec(
  run: (options: PosixRunOptions) => Promise<PosixRunResult>,
  prepared: PreparedHostCommand,
  options: ExecOptions & { timeoutMs: number; maxCaptureBytes?: number | undefined },
  rewrite: (text: string) => string,
  logger: Logger,
  sandboxId: string,
): Promise<ExecResult> {
  const started = performance.now();
  const out = rewritingListener(options.onStdout, rewrite, logger, sandboxId);
  const err = rewritingListener(options.onStderr, rewrite, logger, sandboxId);
  let result: PosixRunResult;
  try {
    result = await run({
      shell: prepared.shell,
      command: prepared.command,
      env: prepared.env,
      ...(prepared.cwd !== undefined ? { cwd: prepared.cwd } : {}),
      ...(prepared.session !== undefined ? { session: prepared.session } : {}),
      ...(prepared.plan !== undefined ? { plan: prepared.plan } : {}),
      timeoutMs: options.timeoutMs,
      signal: options.signal,
      maxCaptureBytes: options.maxCaptureBytes,
      ...(options.stdin !== undefined ? { stdin: options.stdin } : {}),
      ...(out ? { onStdout: out.write } : {}),
      ...(err ? { onStderr: err.write } : {}),
    });
  } finally {
    out?.end();
    err?.end();
  }
  if (options.signal?.aborted) throw new AbortedError(undefined, { cause: options.signal.reason });
  return {
    exitCode: result.timedOut ? null : result.exitCode,
    stdout: await rewriteInTurns(result.stdout, rewrite),
    stderr: await rewriteInTurns(result.stderr, rewrite),
    durationMs: performance.now() - started,
    truncated: result.truncated ?? false,
    timedOut: result.timedOut,
    timeoutMs: options.timeoutMs,
    ...(result.signal !== undefined && !result.timedOut ? { signal: result.signal } : {}),
  };
}
