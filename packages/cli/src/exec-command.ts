import {
  InvalidArgumentError,
  ensureSandboxInitialized,
  shellQuote,
  type SandboxProvider,
} from '@sbx/core';
import { withWorkspaceCwd } from '@sbx/core/internal';
import { loadCliConfig } from './cli-config.js';
import { writeLine } from './cli-io.js';
import { stderrLogger } from './cli-logger.js';
import { parseCommandOutput } from './command-outcome.js';
import { isUsageError, printJson, reportFailure } from './command-result.js';
import { identityOf, type CommandRuntime, type ThreadCommandOptions } from './command-runtime.js';
import { ExitCode } from './exit-codes.js';
import { createProgress, withProgress } from './progress.js';
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

/**
 * `sbx exec`: runs a command in the thread's sandbox, starting in its workspace, prints what it
 * printed and exits with its status.
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
    const opened = await withProgress(progress, `loading ${config.use}`, () =>
      openProvider(config, { logger, allowHostBash: true, importer }),
    );
    provider = opened;
    const context = await toolContextFor(opened, config, {
      userId,
      threadId,
      logger,
      allowHostBash: true,
      signal,
    });
    const sandbox = await withProgress(
      progress,
      `acquiring the sandbox of ${userId}/${threadId}`,
      () => ensureSandboxInitialized(context),
    );
    sandboxId = sandbox.id;
    const text = await withProgress(progress, `running ${command}`, () =>
      sandbox.executeCommand(withWorkspaceCwd(context, sandbox, command), {
        ...(options.timeout !== undefined ? { timeoutMs: options.timeout * 1000 } : {}),
        ...(signal ? { signal } : {}),
      }),
    );
    const outcome = parseCommandOutput(text);
    if (options.json) {
      printJson(io, {
        ok: true,
        sandboxId,
        exitCode: outcome.exitCode,
        timedOut: outcome.timedOut,
        output: outcome.output,
      });
    } else {
      if (outcome.output !== '') {
        io.stdout.write(outcome.output.endsWith('\n') ? outcome.output : `${outcome.output}\n`);
      }
      if (outcome.notice) writeLine(io.stderr, `sbx: ${outcome.notice}`);
    }
    return signal?.aborted ? ExitCode.INTERRUPTED : outcome.exitCode;
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
