import { redactSecrets } from '../config/env-policy.js';
import type { Sandbox } from '../contract/sandbox.js';
import { hostPathMasker } from './local-sandbox-guard.js';
import type { ToolContext } from './tool-context.js';
import { truncateMiddle } from './truncation.js';
import { WHOLE_REWRITE_CHARS, rewriteReach, rewriteThenTruncateMiddle } from './bounded-rewrite.js';

/**
 * What a call that ran a command (`bash`, `process_output`, `process_write`, `process_kill`)
 * reports besides its text, as data: `ToolCallResult.command`. Hosts read the status here instead
 * of parsing the text (an MCP server's `structuredContent`, a framework's exit code).
 */
export interface CommandDetails {
  /** The exit status; `null` while running, when a signal or the time limit ended it, or unknown. */
  readonly exitCode: number | null;
  /** Still running: a command bash left running in the background (yield mode), or a process. */
  readonly running: boolean;
  /** Killed (or given up on) at its time limit. */
  readonly timedOut: boolean;
  /** The signal that ended it, when one did and the sandbox knows it. */
  readonly signal?: string;
  /** The id the process tools take, when the command runs (or ran) as a background process. */
  readonly processId?: string;
  /**
   * Its output as the text shows it: host paths masked, the request's secrets redacted, and the
   * two together at most `bashOutputMaxChars` (each middle-truncated when over its share). For a
   * process, what it printed since the model's last read.
   */
  readonly stdout: string;
  readonly stderr: string;
  /** Output was left out: the sandbox's capture limit, a process's buffer, or the size cap. */
  readonly truncated: boolean;
}

/** A command's outcome as the tool has it: raw output, not yet masked, redacted nor bounded. */
export interface RawCommandDetails extends Omit<CommandDetails, 'stdout' | 'stderr'> {
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Rewrites the two streams and bounds them to `maxChars` together (`0`: no cap): when over, stderr
 * keeps at most half and stdout the rest, each middle-truncated as the text is — and, for a large
 * stream, rewritten only where the cut keeps it (`rewriteThenTruncateMiddle`).
 */
function boundStreams(
  stdout: string,
  stderr: string,
  maxChars: number,
  rewrite: (text: string) => string,
  reach: number,
): { stdout: string; stderr: string; cut: boolean } {
  const large = stdout.length + stderr.length > WHOLE_REWRITE_CHARS;
  if (!large) {
    const out = rewrite(stdout);
    const err = rewrite(stderr);
    if (maxChars <= 0 || out.length + err.length <= maxChars) {
      return { stdout: out, stderr: err, cut: false };
    }
    return shareBetween(out, err, maxChars, (text, share) => truncateMiddle(text, share));
  }
  if (maxChars <= 0) return { stdout: rewrite(stdout), stderr: rewrite(stderr), cut: false };
  return shareBetween(stdout, stderr, maxChars, (text, share) =>
    rewriteThenTruncateMiddle(text, rewrite, share, reach),
  );
}

function shareBetween(
  stdout: string,
  stderr: string,
  maxChars: number,
  cut: (text: string, share: number) => string,
): { stdout: string; stderr: string; cut: boolean } {
  const errShare = Math.min(stderr.length, Math.floor(maxChars / 2));
  const outShare = maxChars - errShare;
  return {
    stdout: cut(stdout, outShare),
    stderr: cut(stderr, Math.max(errShare, maxChars - stdout.length)),
    cut: true,
  };
}

/**
 * The details a tool records for its result: each stream rewritten exactly as the text is (the
 * context's host paths masked, then `env`'s values redacted), then bounded to `maxChars`.
 */
export async function commandDetails(
  context: ToolContext,
  sandbox: Sandbox,
  env: Readonly<Record<string, string>>,
  maxChars: number,
  raw: RawCommandDetails,
): Promise<CommandDetails> {
  const mask = await hostPathMasker(context, sandbox);
  const rewrite = (text: string) => (text === '' ? text : redactSecrets(mask(text), env));
  const bounded = boundStreams(
    raw.stdout,
    raw.stderr,
    maxChars,
    rewrite,
    rewriteReach(Object.values(env)),
  );
  return {
    exitCode: raw.exitCode,
    running: raw.running,
    timedOut: raw.timedOut,
    ...(raw.signal !== undefined ? { signal: raw.signal } : {}),
    ...(raw.processId !== undefined ? { processId: raw.processId } : {}),
    stdout: bounded.stdout,
    stderr: bounded.stderr,
    truncated: raw.truncated || bounded.cut,
  };
}
