import { randomUUID } from 'node:crypto';
import {
  errorMessage,
  AbortedError,
  redactSecrets,
  type ExecuteCommandOptions,
  type Logger,
} from '@sbx/core';
import type { Mutex } from 'async-mutex';
import { withLock } from './abortable-lock.js';
import type { AioApi, ShellCommandResult } from './aio-api.js';
import type { AioRequestOptions } from './aio-http.js';
import { isHttpStatus } from './aio-http-error.js';
import { BASH_EXEC_UNSUPPORTED_MESSAGE } from './bash-exec-unsupported.js';
import {
  assembleOutput,
  bashOutcome,
  frameShellCommand,
  parseFramedOutput,
  shellOutcome,
  type CommandOutcome,
} from './command-output.js';
import type { CommandScope, CommandScopeRegistry } from './command-scopes.js';
import { hasErrorObservation } from './error-observation.js';
import { SESSION_RESET_NOTICE, type ShellSessionManager } from './shell-sessions.js';

/** The container's OOM-kill count and memory limit, from cgroup v2, else v1. */
const OOM_PROBE = [
  'for f in /sys/fs/cgroup/memory.events /sys/fs/cgroup/memory/memory.oom_control; do',
  "  [ -r $f ] && grep '^oom_kill ' $f && break;",
  'done;',
  'for f in /sys/fs/cgroup/memory.max /sys/fs/cgroup/memory/memory.limit_in_bytes; do',
  '  [ -r $f ] && echo "limit $(cat $f)" && break;',
  'done',
].join(' ');

/** What the agent reads after the kernel killed its command at the sandbox's memory limit. */
export function outOfMemoryNotice(limitBytes: number | undefined): string {
  const limit =
    limitBytes === undefined ? '' : ` (its limit is ${Math.round(limitBytes / (1024 * 1024))} MiB)`;
  return (
    `The command was killed because the sandbox ran out of memory${limit}. Use less memory ` +
    '(smaller inputs, streaming instead of loading everything at once), or ask for a larger sandbox.'
  );
}

/** Extra wall clock over a command's own limit for the HTTP answer to arrive. */
const ANSWER_MARGIN_MS = 30_000;

export interface AioCommandDeps {
  readonly sandboxId: string;
  readonly api: AioApi;
  readonly logger: Logger;
  /** The sandbox lock: the default session, bash/exec, writes and downloads. */
  readonly lock: Mutex;
  readonly scopes: CommandScopeRegistry;
  readonly sessions: ShellSessionManager;
  readonly requestTimeoutMs: number;
  readonly noChangeTimeoutSeconds: number;
  readonly envCommandTimeoutSeconds: number;
  readonly httpClosed: () => boolean;
}

/** The command ended the session's shell (`exit`): its frame came from the EXIT trap. */
function endedItsShell(result: ShellCommandResult, token: string): boolean {
  return parseFramedOutput(result.output ?? '', token)?.endedShell === true;
}

/** Puts the session-reset notice first in the output of a command whose shell state was lost. */
function withResetNotice(outcome: CommandOutcome, reset: boolean): CommandOutcome {
  if (!reset) return outcome;
  return { ...outcome, stdout: `${SESSION_RESET_NOTICE}\n${outcome.stdout}` };
}

/**
 * How one AioSandbox runs commands on the image: framed commands on its shell sessions (the
 * default session and one per scope, see `ShellSessionManager`), env-bearing commands through
 * `bash/exec`, each with the image's failure modes handled (ErrorObservation, evicted sessions,
 * commands outliving their limit, images without `bash/exec`).
 */
export class AioCommandRunner {
  /** True after the image answered 404 to `POST /v1/bash/exec` (an image older than 1.9.x). */
  bashExecUnsupported = false;

  /** OOM kills already reported (the container's cgroup counter; a new container starts at 0). */
  #oomKillsSeen = 0;

  constructor(private readonly deps: AioCommandDeps) {}

  /**
   * A command killed by SIGKILL (137) may have been the kernel's OOM killer at the container's
   * memory limit. The container's cgroup counts those kills: when the count went up, the agent
   * reads that it ran out of memory (and the limit), not a bare exit code.
   */
  async withOomNote(outcome: CommandOutcome): Promise<CommandOutcome> {
    if (outcome.exitCode !== 137 || this.bashExecUnsupported) return outcome;
    let probe;
    try {
      probe = await this.deps.api.bash.exec(
        { command: OOM_PROBE, env: {}, hardTimeout: 10 },
        { timeoutMs: 15_000 },
      );
    } catch (err) {
      this.deps.logger.debug('Could not read the sandbox cgroup after a SIGKILL', {
        sandbox_id: this.deps.sandboxId,
        error: errorMessage(err),
      });
      return outcome;
    }
    await this.closeBashSession(probe.sessionId);
    const text = probe.stdout ?? '';
    const kills = Number(/^oom_kill (\d+)$/m.exec(text)?.[1] ?? 'NaN');
    if (!Number.isFinite(kills) || kills <= this.#oomKillsSeen) return outcome;
    this.#oomKillsSeen = kills;
    const limit = Number(/^limit (\d+)$/m.exec(text)?.[1] ?? 'NaN');
    const notice = outOfMemoryNotice(Number.isFinite(limit) ? limit : undefined);
    return { ...outcome, stderr: outcome.stderr ? `${outcome.stderr}\n${notice}` : notice };
  }

  commandRequest(timeoutMs: number | undefined, signal?: AbortSignal): AioRequestOptions {
    return {
      signal,
      timeoutMs: Math.max(this.deps.requestTimeoutMs, (timeoutMs ?? 0) + ANSWER_MARGIN_MS),
    };
  }

  isCorrupted(result: ShellCommandResult, token: string): boolean {
    // A healthy session that merely printed the signature still completes the frame.
    return (
      hasErrorObservation(result.output) &&
      parseFramedOutput(result.output ?? '', token) === undefined
    );
  }

  limits(timeoutMs: number | undefined) {
    return {
      hardTimeoutSeconds: timeoutMs === undefined ? undefined : timeoutMs / 1000,
      noChangeTimeoutSeconds: this.deps.noChangeTimeoutSeconds,
    };
  }

  async execFramed(
    command: string,
    sessionId: string | undefined,
    timeoutMs: number | undefined,
    signal: AbortSignal | undefined,
  ): Promise<{ result: ShellCommandResult; token: string }> {
    const framed = frameShellCommand(command);
    const result = await this.deps.api.shellExec(
      {
        command: framed.script,
        noChangeTimeout: this.deps.noChangeTimeoutSeconds,
        ...(sessionId === undefined ? {} : { id: sessionId }),
        ...(timeoutMs === undefined ? {} : { hardTimeout: timeoutMs / 1000 }),
      },
      this.commandRequest(timeoutMs, signal),
    );
    return { result, token: framed.token };
  }

  /**
   * Caller holds `this.deps.lock`. Runs on this client's default session (created with an id: the
   * image has no default session of its own). A session the image dropped (404) is recreated and
   * the output says the shell state is gone; a corrupted session is replaced; a command that
   * outlives its limit is stopped, so the session does not stay busy.
   */
  async runOnDefaultSession(
    command: string,
    timeoutMs: number | undefined,
    signal: AbortSignal | undefined,
  ): Promise<CommandOutcome> {
    let session = await this.deps.sessions.defaultSession(signal);
    let reset = session.reset;
    let run;
    try {
      run = await this.execFramed(command, session.id, timeoutMs, signal);
    } catch (err) {
      if (!isHttpStatus(err, 404)) throw err;
      this.deps.logger.warn('AIO default shell session not found; recreating it', {
        sandbox_id: this.deps.sandboxId,
      });
      this.deps.sessions.forgetDefault();
      session = await this.deps.sessions.defaultSession(signal);
      reset = true;
      run = await this.execFramed(command, session.id, timeoutMs, signal);
    }
    if (this.isCorrupted(run.result, run.token)) {
      this.deps.logger.warn(
        'AIO default shell session answered ErrorObservation; retrying once on a fresh session',
        { sandbox_id: this.deps.sandboxId },
      );
      // The corrupted session is replaced for later commands; this one retries on a throwaway.
      const corrupted = this.deps.sessions.forgetDefault();
      if (corrupted !== undefined) await this.deps.sessions.deleteQuietly(corrupted);
      const fresh = randomUUID();
      await this.deps.sessions.create(fresh, signal);
      try {
        const retry = await this.execFramed(command, fresh, timeoutMs, signal);
        return shellOutcome(retry.result, retry.token, this.limits(timeoutMs));
      } finally {
        await this.deps.sessions.deleteQuietly(fresh);
      }
    }
    if (run.result.status !== undefined && run.result.status !== 'completed') {
      if (!(await this.deps.sessions.stopRunning(session.id))) this.deps.sessions.forgetDefault();
    } else if (endedItsShell(run.result, run.token)) {
      // `exit` ended the session's shell: the agent asked for it, so the next command starts
      // afresh without a state-loss notice.
      this.deps.sessions.forgetDefault({ endedByCommand: true });
    }
    return this.withOomNote(
      withResetNotice(shellOutcome(run.result, run.token, this.limits(timeoutMs)), reset),
    );
  }

  async runWithEnv(
    command: string,
    env: Record<string, string>,
    options: ExecuteCommandOptions,
  ): Promise<string> {
    const outcome = await this.runWithEnvOutcome(command, env, options);
    if (outcome === undefined) return BASH_EXEC_UNSUPPORTED_MESSAGE;
    return redactSecrets(assembleOutput(outcome), env);
  }

  /**
   * A command with per-call env through `bash/exec` (secrets never ride a persistent session).
   * `undefined` when the image has no `bash/exec`. Output is not yet redacted.
   */
  async runWithEnvOutcome(
    command: string,
    env: Record<string, string>,
    options: ExecuteCommandOptions,
  ): Promise<CommandOutcome | undefined> {
    if (this.bashExecUnsupported) return undefined;
    const hardTimeout =
      options.timeoutMs === undefined
        ? this.deps.envCommandTimeoutSeconds
        : options.timeoutMs / 1000;
    const http = this.commandRequest(hardTimeout * 1000, options.signal);
    const attempt = () =>
      withLock(this.deps.lock, options.signal, () =>
        this.deps.api.bash.exec({ command, env, hardTimeout }, http),
      );
    let first;
    try {
      first = await attempt();
    } catch (err) {
      if (isHttpStatus(err, 404)) {
        this.bashExecUnsupported = true;
        this.deps.logger.error(
          'AIO sandbox image has no POST /v1/bash/exec: commands with per-call environment cannot run; upgrade the image',
          { sandbox_id: this.deps.sandboxId },
        );
        return undefined;
      }
      throw err;
    }
    await this.closeBashSession(first.sessionId);
    let outcome = await this.withOomNote(bashOutcome(first, hardTimeout));
    if (hasErrorObservation(first.stdout) || hasErrorObservation(first.stderr)) {
      this.deps.logger.warn('AIO bash/exec answered ErrorObservation; retrying once', {
        sandbox_id: this.deps.sandboxId,
      });
      try {
        const retry = await attempt();
        await this.closeBashSession(retry.sessionId);
        const clean =
          (retry.stdout || retry.stderr) &&
          !hasErrorObservation(retry.stdout) &&
          !hasErrorObservation(retry.stderr);
        if (clean) outcome = await this.withOomNote(bashOutcome(retry, hardTimeout));
      } catch (err) {
        if (err instanceof AbortedError) throw err;
        this.deps.logger.warn('AIO bash/exec retry failed; returning the first answer', {
          sandbox_id: this.deps.sandboxId,
          error: errorMessage(err),
        });
      }
    }
    return outcome;
  }

  /**
   * Each `bash/exec` call opens a bash session in the image, which would stay for an hour (50 at
   * most, the oldest evicted even when busy): closed as soon as the answer is in.
   */
  async closeBashSession(sessionId: string | undefined): Promise<void> {
    if (sessionId === undefined) return;
    try {
      await this.deps.api.bash.closeSession(sessionId, { timeoutMs: 10_000 });
    } catch (err) {
      this.deps.logger.debug('Could not close an AIO bash session', {
        sandbox_id: this.deps.sandboxId,
        session_id: sessionId,
        error: errorMessage(err),
      });
    }
  }

  /** Caller holds the scope's lock. */
  async runInScope(
    scope: CommandScope,
    command: string,
    timeoutMs: number | undefined,
    signal: AbortSignal | undefined,
  ): Promise<CommandOutcome> {
    try {
      return await this.runInScopeSession(scope, command, timeoutMs, signal);
    } finally {
      scope.lastUsedMs = Date.now();
      this.deps.sessions.notifyFreed();
    }
  }

  async runInScopeSession(
    scope: CommandScope,
    command: string,
    timeoutMs: number | undefined,
    signal: AbortSignal | undefined,
  ): Promise<CommandOutcome> {
    const all = () => this.deps.scopes.all();
    let session = await this.deps.sessions.scopeSession(scope, all, signal);
    let reset = session.reset;
    let run;
    try {
      run = await this.execFramed(command, session.id, timeoutMs, signal);
    } catch (err) {
      // The session is gone server-side (evicted, or the shell exited): one new one.
      if (!isHttpStatus(err, 404)) throw err;
      this.deps.logger.warn('AIO scope session not found; recreating it once', {
        sandbox_id: this.deps.sandboxId,
        scope_id: scope.scopeId,
      });
      scope.sessionId = undefined;
      session = await this.deps.sessions.scopeSession(scope, all, signal);
      reset = true;
      run = await this.execFramed(command, session.id, timeoutMs, signal);
    }

    if (this.isCorrupted(run.result, run.token)) {
      this.deps.logger.warn('AIO scope session answered ErrorObservation; replacing it', {
        sandbox_id: this.deps.sandboxId,
        scope_id: scope.scopeId,
      });
      scope.sessionId = undefined;
      await this.deps.sessions.deleteQuietly(session.id);
      const replacement = await this.deps.sessions.scopeSession(scope, all, signal);
      const retry = await this.execFramed(command, replacement.id, timeoutMs, signal);
      if (this.isCorrupted(retry.result, retry.token)) {
        scope.sessionId = undefined;
        await this.deps.sessions.deleteQuietly(replacement.id);
      }
      return shellOutcome(retry.result, retry.token, this.limits(timeoutMs));
    }

    if (run.result.status !== undefined && run.result.status !== 'completed') {
      // The image leaves a timed-out command running: stop it, so the session frees up.
      if (!(await this.deps.sessions.stopRunning(session.id))) scope.sessionId = undefined;
    } else if (endedItsShell(run.result, run.token)) {
      scope.sessionId = undefined;
    }
    return this.withOomNote(
      withResetNotice(shellOutcome(run.result, run.token, this.limits(timeoutMs)), reset),
    );
  }

  async dropScopeSession(scope: CommandScope): Promise<void> {
    const id = scope.sessionId;
    scope.sessionId = undefined;
    if (id !== undefined && !this.deps.httpClosed()) await this.deps.sessions.deleteQuietly(id);
    this.deps.sessions.notifyFreed();
  }
}
