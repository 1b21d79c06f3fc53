import { randomBytes, randomUUID } from 'node:crypto';
import {
  CapabilityNotSupportedError,
  InvalidArgumentError,
  errorMessage,
  type Logger,
  type ProcessInput,
} from '@sbx/core';
import { execViaLauncher, limitSeconds } from '@sbx/core/provider-kit';
import { shellQuote, type ExecOptions, type ExecResult } from '@sbx/core';
import type {
  AttachedProcess,
  LauncherExecOptions,
  LaunchOptions,
  LaunchedExit,
  LaunchedProcess,
  ProcessLauncher,
  ProcessSink,
} from '@sbx/core/provider-kit';
import type { AioApi, BashOutput } from './aio-api.js';
import { isHttpStatus } from './aio-http-error.js';

/** How long one `bash/output` long-poll may wait for new output before it is asked again. */
const POLL_WAIT_SECONDS = 10;
/** Extra wall clock over the long-poll for its answer to arrive. */
const POLL_ANSWER_MARGIN_MS = 30_000;
/** Consecutive failed polls after which the process is given up as lost. */
const MAX_POLL_FAILURES = 5;

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

export interface AioLaunchHooks {
  readonly api: AioApi;
  readonly logger: Logger;
  readonly sandboxId: string;
  /** Where a caller's cwd lives in the container (virtual paths mapped to the home dir). */
  execDir(cwd: string): Promise<string>;
  /** The client was closed: stop polling. */
  closed(): boolean;
  /** Waits between failed polls (injected so tests need not sleep). */
  pause(ms: number): Promise<void>;
  /**
   * Background processes (the process table's launcher): sessions named `sbxp-<hex>`, which
   * another client of the container attaches by that name. The launcher of `exec` leaves it off.
   */
  readonly attachable?: boolean;
}

/** Where polling a command's output starts, and whether its follower was detached. */
interface Follow {
  detached: boolean;
  readonly offset: number;
  readonly stderrOffset: number;
  /**
   * Only the client that started the command closes its session: the image answers a poll of a
   * closed session with 404, so a client that attached and saw the end first would turn the
   * starter's exit code into `lost`.
   */
  readonly closesSession: boolean;
}

/** The session names of sbx background processes, and nothing else, are attached. */
const SESSION_PREFIX = 'sbxp-';
const SESSION_ID_RE = /^sbxp-[0-9a-f]{16}$/;
/** More running sbx sessions than this are not looked at (the image caps its sessions at 50). */
const MAX_DISCOVERED = 64;
/** A longer command text from the image is cut (it is only shown). */
const MAX_LISTED_COMMAND_CHARS = 4096;

/**
 * Processes on the image's async bash API: each one starts in a bash session of its own
 * (`bash/exec` with `async_mode`), its output is long-polled by byte offset (`bash/output` with
 * `wait`), so a line reaches the sink as soon as the image has it, and `bash/write` / `bash/kill`
 * feed and signal it. The client that started a command closes its session once the command has
 * ended, as the image would keep it for an hour; a client that attached leaves it. The image has
 * no way to close a command's input, and knows SIGTERM, SIGKILL and SIGINT only.
 */
export class AioBashLauncher implements ProcessLauncher {
  constructor(private readonly hooks: AioLaunchHooks) {}

  async launch(
    command: string,
    options: LaunchOptions,
    sink: ProcessSink,
  ): Promise<LaunchedProcess> {
    const { api } = this.hooks;
    const execDir = options.cwd === undefined ? undefined : await this.hooks.execDir(options.cwd);
    // A background process gets a session of a name sbx chose, so another client of the
    // container finds it (`discover`) and reaches it by that name (`attach`).
    const named = this.hooks.attachable
      ? `${SESSION_PREFIX}${randomBytes(8).toString('hex')}`
      : undefined;
    if (named !== undefined) await api.bash.createSession(named, { timeoutMs: 10_000 });
    const { sessionId, commandId } = await api.bash
      .start({
        command,
        ...(named !== undefined ? { sessionId: named } : {}),
        ...(options.env ? { env: options.env } : {}),
        ...(execDir !== undefined ? { execDir } : {}),
        // A backstop for a client that goes away: sbx kills at the limit itself, a second before.
        ...(options.timeoutMs !== undefined
          ? { hardTimeout: limitSeconds(options.timeoutMs) + 1 }
          : {}),
      })
      .catch(async (error: unknown) => {
        if (named !== undefined) await this.#close(named);
        throw error;
      });
    return {
      ...(named !== undefined ? { id: sessionId } : {}),
      ...this.#control(sessionId, commandId, sink, {
        detached: false,
        offset: 0,
        stderrOffset: 0,
        closesSession: true,
      }),
    };
  }

  /** A running background process another client started, by its session name. */
  async attach(id: string, sink: ProcessSink): Promise<AttachedProcess | undefined> {
    if (!this.hooks.attachable || !SESSION_ID_RE.test(id)) return undefined;
    let probe: BashOutput;
    try {
      probe = await this.hooks.api.bash.output(
        { sessionId: id, offset: 0, stderrOffset: 0, waitSeconds: 0 },
        { timeoutMs: 10_000 },
      );
    } catch (error) {
      if (isHttpStatus(error, 404)) return undefined;
      throw error;
    }
    if (probe.status !== 'running' && probe.status !== 'pending') return undefined;
    // What the image kept of the output so far goes to the buffer now, before the first poll.
    if (probe.stdout) sink.stdout(probe.stdout);
    if (probe.stderr) sink.stderr(probe.stderr);
    const follow = {
      detached: false,
      offset: probe.offset,
      stderrOffset: probe.stderrOffset,
      closesSession: false,
    };
    return {
      id,
      command: (probe.command ?? '').slice(0, MAX_LISTED_COMMAND_CHARS),
      ...this.#control(id, probe.commandId, sink, follow),
      detach: async () => {
        follow.detached = true;
      },
    };
  }

  /** Names of the sbx background sessions with a command running in them now. */
  async discover(): Promise<readonly string[]> {
    if (!this.hooks.attachable) return [];
    const sessions = await this.hooks.api.bash.sessions({ timeoutMs: 10_000 });
    return sessions
      .filter((s) => SESSION_ID_RE.test(s.sessionId) && s.currentCommand !== undefined)
      .slice(0, MAX_DISCOVERED)
      .map((s) => s.sessionId);
  }

  #control(
    sessionId: string,
    commandId: string | undefined,
    sink: ProcessSink,
    follow: Follow,
  ): Omit<LaunchedProcess, 'id'> {
    const { api } = this.hooks;
    return {
      exited: this.#follow(sessionId, commandId, sink, follow),
      kill: async (signal) => {
        if (signal === 'SIGHUP') {
          throw new CapabilityNotSupportedError(
            'signal',
            'The AIO image sends SIGTERM, SIGKILL and SIGINT only',
          );
        }
        await api.bash.kill({ sessionId, signal }, { timeoutMs: 10_000 });
      },
      write: async (input: ProcessInput) => {
        let text: string;
        try {
          text = typeof input === 'string' ? input : strictUtf8.decode(input);
        } catch {
          throw new InvalidArgumentError('the AIO image takes process input as UTF-8 text only');
        }
        await api.bash.write({ sessionId, commandId, input: text }, { timeoutMs: 10_000 });
      },
    };
  }

  /** Polls until the command has ended; never rejects (a lost command ends with no status). */
  async #follow(
    sessionId: string,
    commandId: string | undefined,
    sink: ProcessSink,
    follow: Follow,
  ): Promise<LaunchedExit> {
    let { offset, stderrOffset } = follow;
    let failures = 0;
    let exit: LaunchedExit = { exitCode: null };
    for (;;) {
      // Detached: another record follows this process now; the session is not ours to close.
      if (follow.detached) return exit;
      let answer: BashOutput;
      try {
        answer = await this.hooks.api.bash.output(
          { sessionId, commandId, offset, stderrOffset, waitSeconds: POLL_WAIT_SECONDS },
          { timeoutMs: POLL_WAIT_SECONDS * 1000 + POLL_ANSWER_MARGIN_MS },
        );
      } catch (error) {
        if (isHttpStatus(error, 404)) {
          // The image dropped the session (its bash-session cap evicts the oldest, even busy).
          this.hooks.logger.warn(
            'the AIO image dropped the bash session of a background command; it is lost',
            { sandbox_id: this.hooks.sandboxId, session_id: sessionId },
          );
          return { exitCode: null, signal: 'lost' };
        }
        failures += 1;
        if (this.hooks.closed() || failures >= MAX_POLL_FAILURES) {
          this.hooks.logger.warn('lost track of an AIO background command', {
            sandbox_id: this.hooks.sandboxId,
            session_id: sessionId,
            error: errorMessage(error),
          });
          break;
        }
        await this.hooks.pause(250 * 2 ** failures);
        continue;
      }
      failures = 0;
      if (answer.stdout) sink.stdout(answer.stdout);
      if (answer.stderr) sink.stderr(answer.stderr);
      offset = answer.offset;
      stderrOffset = answer.stderrOffset;
      if (answer.status !== 'running' && answer.status !== 'pending') {
        exit =
          answer.status === 'completed'
            ? { exitCode: answer.exitCode }
            : { exitCode: null, signal: answer.status === 'timed_out' ? 'SIGKILL' : 'killed' };
        break;
      }
    }
    if (follow.closesSession && !this.hooks.closed()) await this.#close(sessionId);
    return exit;
  }

  /** Closes a session the image would otherwise keep for an hour; a failure is only logged. */
  async #close(sessionId: string): Promise<void> {
    await this.hooks.api.bash
      .closeSession(sessionId, { timeoutMs: 10_000 })
      .catch((error: unknown) =>
        this.hooks.logger.debug('Could not close an AIO bash session', {
          sandbox_id: this.hooks.sandboxId,
          session_id: sessionId,
          error: errorMessage(error),
        }),
      );
  }
}

/**
 * `exec` as an async bash command (streamed, with a cwd or input). The image cannot close a
 * command's input, so input is written to a file first and the command reads it from there (the
 * file is removed as soon as the command has it open). The command goes to `eval` as one quoted
 * word, never spliced between our braces: a `}` of its own would close the group, and what
 * followed ran without the input.
 */
export async function execInBashProcess(
  launcher: AioBashLauncher,
  api: AioApi,
  command: string,
  options: ExecOptions,
  limits: LauncherExecOptions,
): Promise<ExecResult> {
  if (options.stdin === undefined) return execViaLauncher(launcher, command, options, limits);
  const file = `/tmp/.sbx-stdin-${randomUUID()}`;
  const bytes =
    typeof options.stdin === 'string' ? Buffer.from(options.stdin, 'utf8') : options.stdin;
  await api.writeFile(file, Buffer.from(bytes).toString('base64'), 'base64');
  const { stdin: _stdin, ...rest } = options;
  const script = `{ rm -f '${file}'; eval ${shellQuote(command)}; } < '${file}'`;
  return execViaLauncher(launcher, script, rest, limits);
}
