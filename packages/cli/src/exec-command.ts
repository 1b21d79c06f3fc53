import {
  InvalidArgumentError,
  ensureSandboxInitialized,
  shellQuote,
  type ExecResult,
  type SandboxProvider,
} from '@sbx/core';
import { timeoutNotice, workspaceCommand } from '@sbx/core/internal';
import { loadCliConfig } from './cli-config.js';
import { writeLine } from './cli-io.js';
import { stderrLogger } from './cli-logger.js';
import { isUsageError, printJson, reportFailure } from './command-result.js';
import { identityOf, type CommandRuntime, type ThreadCommandOptions } from './command-runtime.js';
import { ExitCode } from './exit-codes.js';
import { createProgress, withProgress } from './progress.js';
import { isConfinedProvider, isHostDirectoryProvider } from './host-directory-provider.js';
import { closeProviderSession, openProvider, toolContextFor } from './provider-session.js';

export interface ExecOptions extends ThreadCommandOptions {
  /** Seconds; default: the provider's (`sandbox.bash_command_timeout` for the host provider). */
  timeout?: number;
}

/**
 * One word is a shell command line as written (`sbx exec -- 'make && make test'`); several words
 * are an argument vector, each quoted, as `docker exec` treats them (`sbx exec -- ls -la 'a b'`).
 */
export function commandLineOf(words: readonly string[]): string {
  if (words.length === 0) {
    throw new InvalidArgumentError('exec needs a command: sbx exec [options] -- <command...>');
  }
  return words.length === 1 ? (words[0] as string) : words.map((w) => shellQuote(w)).join(' ');
}

/** The process status `sbx exec` exits with: the command's own, 124 at its limit, 1 when unknown. */
export function exitStatusOf(result: ExecResult): number {
  if (result.timedOut) return ExitCode.EXEC_TIMEOUT;
  const code = result.exitCode;
  if (code === null) return ExitCode.FAILURE;
  return Number.isInteger(code) && code >= 0 && code <= 255 ? code : ExitCode.FAILURE;
}

/**
 * `sbx exec`: runs a command in the thread's sandbox, starting in its workspace, streams what it
 * prints (stderr to stderr) and exits with its status; Ctrl-C kills the command.
 *
 * Host bash is enabled for this command whatever `sandbox.allow_host_bash` says: the operator typed
 * the command, so the setting (which keeps *agents* off the host shell) protects nothing here.
 */
export async function execCommand(
  words: readonly string[],
  options: ExecOptions,
  runtime: CommandRuntime,
): Promise<number> {
  const { io, signal, importer } = runtime;
  const logger = stderrLogger(io.stderr, options.verbose);
  const progress = createProgress(io.stderr, !options.json);
  let provider: SandboxProvider | undefined;
  let sandboxId: string | undefined;
  try {
    const command = commandLineOf(words);
    if (options.timeout !== undefined && !(options.timeout > 0)) {
      throw new InvalidArgumentError(`--timeout must be a positive number of seconds`);
    }
    const { userId, threadId } = identityOf(options);
    const { config } = await loadCliConfig(options, io);
    // The operator's command runs as the thread's agent would run it: confined where the host
    // provider confines commands. On a host that cannot confine, it runs with the operator's own
    // rights as it always did — the operator typed it — and stderr says so.
    let opened = await withProgress(progress, `loading ${config.use}`, () =>
      openProvider(config, { logger, importer }),
    );
    provider = opened;
    let hostBash: true | undefined;
    if (isHostDirectoryProvider(opened) && !isConfinedProvider(opened) && !config.allowHostBash) {
      await opened.shutdown();
      provider = undefined;
      opened = await openProvider(config, { logger, allowHostBash: true, importer });
      provider = opened;
      hostBash = true;
      progress.stop();
      writeLine(
        io.stderr,
        'sbx: commands cannot be confined on this host (see sbx doctor); this one runs unconfined, with your rights',
      );
    }
    const context = await toolContextFor(opened, config, {
      userId,
      threadId,
      logger,
      allowHostBash: hostBash,
      signal,
    });
    const sandbox = await withProgress(
      progress,
      `acquiring the sandbox of ${userId}/${threadId}`,
      () => ensureSandboxInitialized(context),
    );
    sandboxId = sandbox.id;
    progress.stop();
    // Output goes out as the command prints it: stdout to stdout, stderr to stderr. With --json
    // nothing streams; the one JSON document carries both.
    const stream = !options.json;
    const started = workspaceCommand(context, sandbox, command);
    const result = await sandbox.exec(started.command, {
      ...(started.cwd !== undefined ? { cwd: started.cwd } : {}),
      ...(options.timeout !== undefined ? { timeoutMs: options.timeout * 1000 } : {}),
      // Ctrl-C aborts the call, which kills the command in the sandbox.
      ...(signal ? { signal } : {}),
      ...(stream
        ? {
            onStdout: (chunk: string) => io.stdout.write(chunk),
            onStderr: (chunk: string) => io.stderr.write(chunk),
          }
        : {}),
    });
    const exitCode = exitStatusOf(result);
    // The prompt that follows starts on a line of its own, as it did before output streamed.
    if (stream && result.stdout !== '' && !result.stdout.endsWith('\n')) io.stdout.write('\n');
    if (options.json) {
      printJson(io, {
        ok: true,
        sandboxId,
        exitCode: result.timedOut ? exitCode : result.exitCode,
        timedOut: result.timedOut,
        output: result.stdout + result.stderr,
        stdout: result.stdout,
        stderr: result.stderr,
        durationMs: Math.round(result.durationMs),
        truncated: result.truncated,
        ...(result.signal !== undefined ? { signal: result.signal } : {}),
      });
    } else if (result.timedOut) {
      const notice =
        result.notice ?? timeoutNotice((result.timeoutMs ?? (options.timeout ?? 0) * 1000) / 1000);
      writeLine(io.stderr, `sbx: ${notice}`);
    } else if (result.notice !== undefined) {
      writeLine(io.stderr, `sbx: ${result.notice}`);
    }
    return signal?.aborted ? ExitCode.INTERRUPTED : exitCode;
  } catch (err) {
    progress.stop();
    if (signal?.aborted) {
      writeLine(io.stderr, 'sbx: interrupted');
      return ExitCode.INTERRUPTED;
    }
    reportFailure(io, options, err);
    return isUsageError(err) ? ExitCode.USAGE : ExitCode.EXEC_SBX_ERROR;
  } finally {
    if (provider) await closeProviderSession(provider, sandboxId, logger);
  }
}
