import { redactSecrets, secretsForLines } from '../config/env-policy.js';
import type { Sandbox } from '../contract/sandbox.js';
import { silentLogger, type Logger } from '../logging/logger.js';
import { StreamRewriter } from '../process/stream-rewriter.js';
import { hostPathMasker } from './local-sandbox-guard.js';
import type { ToolContext } from './tool-context.js';

/** A piece of a running command's output, as the model will read it in the result. */
export interface ToolOutputChunk {
  readonly stream: 'stdout' | 'stderr';
  /**
   * Whole lines (a line over 64 KiB is passed on in pieces, and the last line without an end
   * comes when the command ends), host paths masked and the request's secrets redacted.
   */
  readonly text: string;
}

/**
 * Receives a tool call's output while it runs (`ToolCallOptions.onOutput`). Called synchronously,
 * in order, and only before the call's result resolves; it must not block (a returned promise is
 * not awaited). A listener that throws is logged once and not called again; the call goes on.
 */
export type ToolOutputListener = (chunk: ToolOutputChunk) => void;

/**
 * Most characters one call streams, whatever `bashOutputMaxChars` says (also when that is `0`):
 * a listener that accumulates what it gets must stay bounded when a command floods.
 */
export const MAX_STREAMED_OUTPUT_CHARS = 1024 * 1024;

/** Characters one call streams: `bashOutputMaxChars` when set, capped by the hard maximum. */
export function streamedOutputLimit(bashOutputMaxChars: number): number {
  return bashOutputMaxChars > 0
    ? Math.min(bashOutputMaxChars, MAX_STREAMED_OUTPUT_CHARS)
    : MAX_STREAMED_OUTPUT_CHARS;
}

/** The notice that ends a stream cut at its limit (the result still shows how the command ended). */
export function streamLimitNotice(limit: number): string {
  return `\n... [streaming stopped after ${limit} chars; the result shows the end] ...\n`;
}

/**
 * One tool call's streamed output: the command's listeners feed it, and the caller's listener
 * gets the text a line at a time, rewritten as the result is (host paths masked, secrets
 * redacted: `StreamRewriter`, as the process table streams), at most `limit` characters in all,
 * and nothing once the call is over.
 */
export class ToolOutputStream {
  #listener: ToolOutputListener | undefined;
  #left: number;
  readonly #limit: number;
  readonly #logger: Logger;
  readonly #sandboxId: string;
  readonly #stdout: StreamRewriter;
  readonly #stderr: StreamRewriter;
  readonly #done = new AbortController();

  private constructor(
    listener: ToolOutputListener,
    rewrite: (text: string) => string,
    limit: number,
    logger: Logger,
    sandboxId: string,
  ) {
    this.#listener = listener;
    this.#left = limit;
    this.#limit = limit;
    this.#logger = logger;
    this.#sandboxId = sandboxId;
    this.#stdout = new StreamRewriter(rewrite, (text) => this.#deliver('stdout', text));
    this.#stderr = new StreamRewriter(rewrite, (text) => this.#deliver('stderr', text));
  }

  /**
   * A stream for one call of `sandbox`, rewriting as the tool's result is rewritten: the
   * context's host paths masked (local sandboxes), then the request's `env` values redacted.
   */
  static async open(
    context: ToolContext,
    sandbox: Sandbox,
    env: Readonly<Record<string, string>>,
    limit: number,
    listener: ToolOutputListener,
  ): Promise<ToolOutputStream> {
    const mask = await hostPathMasker(context, sandbox);
    const secrets = secretsForLines(env);
    return new ToolOutputStream(
      listener,
      (text) => redactSecrets(mask(text), secrets),
      limit,
      context.logger ?? silentLogger,
      sandbox.id,
    );
  }

  /**
   * Aborted once the stream takes no more output (closed, or past its limit): a process table
   * given it as `listenUntil` stops decoding for this stream.
   */
  get closed(): AbortSignal {
    return this.#done.signal;
  }

  /** For `ExecOptions.onStdout` / `ProcessStartOptions.onStdout`. */
  readonly onStdout = (text: string): void => {
    // Past the limit, or after the call, output is not even rewritten.
    if (this.#listener !== undefined) this.#stdout.write(text);
  };

  readonly onStderr = (text: string): void => {
    if (this.#listener !== undefined) this.#stderr.write(text);
  };

  /**
   * Passes on the lines still held (the last one without its end) and stops: output that comes
   * later (a process left running in the background) reaches no one.
   */
  close(): void {
    if (this.#listener === undefined) return;
    this.#stdout.end();
    this.#stderr.end();
    this.#stop();
  }

  #deliver(stream: ToolOutputChunk['stream'], text: string): void {
    if (this.#listener === undefined || text === '') return;
    if (text.length <= this.#left) {
      this.#left -= text.length;
      this.#call({ stream, text });
      return;
    }
    let cut = this.#left;
    // Never half of a surrogate pair.
    if (cut > 0 && /[\uD800-\uDBFF]/.test(text.charAt(cut - 1))) cut -= 1;
    this.#left = 0;
    if (cut > 0) this.#call({ stream, text: text.slice(0, cut) });
    this.#call({ stream, text: streamLimitNotice(this.#limit) });
    this.#stop();
  }

  #call(chunk: ToolOutputChunk): void {
    const listener = this.#listener;
    if (listener === undefined) return;
    try {
      listener(chunk);
    } catch (error) {
      this.#stop();
      this.#logger.warn('a tool output listener threw; it gets no more output', {
        sandboxId: this.#sandboxId,
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }

  #stop(): void {
    this.#listener = undefined;
    this.#done.abort();
  }
}
