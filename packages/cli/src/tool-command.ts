import {
  errorMessage,
  InvalidArgumentError,
  runToolCall,
  type SandboxProvider,
  type ToolCallResult,
  type ToolContext,
} from '@sbx/core';
import { TOOL_NAMES, isToolName } from '@sbx/core/internal';
import { loadCliConfig } from './cli-config.js';
import { writeLine } from './cli-io.js';
import { stderrLogger } from './cli-logger.js';
import { exitCodeFor, printJson, reportFailure } from './command-result.js';
import { identityOf, type CommandRuntime, type ThreadCommandOptions } from './command-runtime.js';
import { ExitCode } from './exit-codes.js';
import { createProgress, withProgress } from './progress.js';
import { closeProviderSession, openProvider, toolContextFor } from './provider-session.js';
import { cliToolSessionFile, loadCliToolSession, saveCliToolSession } from './cli-tool-session.js';

export interface ToolOptions extends ThreadCommandOptions {
  /** Enables host bash on the host provider for this call (default: `sandbox.allow_host_bash`). */
  allowHostBash?: boolean;
}

/** The tool's arguments: a JSON object, as a model would send them. */
export function parseToolArguments(text: string | undefined): Record<string, unknown> {
  if (text === undefined || text.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new InvalidArgumentError(`tool arguments must be a JSON object: ${errorMessage(err)}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidArgumentError(
      'tool arguments must be a JSON object, e.g. \'{"path": "/mnt/user-data/workspace"}\'',
    );
  }
  return value as Record<string, unknown>;
}

/**
 * Failures that mean sbx could not do the work (no sandbox, no store, no provider), as opposed to
 * a tool that ran and refused or failed: these exit `UNAVAILABLE` like every other command's.
 */
const UNAVAILABLE_CODES: ReadonlySet<string> = new Set([
  'SANDBOX_RUNTIME',
  'SANDBOX_NOT_FOUND',
  'SANDBOX_CAPACITY_EXCEEDED',
  'SANDBOX_BEING_DESTROYED',
  'OWNERSHIP_BACKEND',
  'CAPACITY_BACKEND',
  'MISSING_DEPENDENCY',
  'PROVIDER_LOAD',
  'PROVIDER_CLOSED',
  'ACQUIRE_SERIALIZER_CLOSED',
]);

export function toolExitCode(result: ToolCallResult): number {
  if (!result.error) return ExitCode.OK;
  return UNAVAILABLE_CODES.has(result.error.code) ? ExitCode.UNAVAILABLE : ExitCode.FAILURE;
}

/**
 * `sbx tool <name> '<json>'`: one agent tool call through core's `runTool`, exactly as an agent
 * would make it (same validation, path confinement, truncation and error texts). Prints the tool's
 * result; exits 1 when the tool reports a failure, 3 when sbx could not reach a sandbox.
 *
 * The calls of one user's thread share one tool session, kept in the data directory between
 * invocations (`cli-tool-session.ts`): `sbx tool read_file` and then `sbx tool str_replace` of
 * that file work as they do in one agent run, and read-before-write still refuses to change a
 * file that changed since it was read.
 */
export async function toolCommand(
  name: string,
  rawArguments: string | undefined,
  options: ToolOptions,
  runtime: CommandRuntime,
): Promise<number> {
  const { io, signal, importer } = runtime;
  const logger = stderrLogger(io.stderr, options.verbose);
  const progress = createProgress(io.stderr, !options.json);
  let provider: SandboxProvider | undefined;
  let context: ToolContext | undefined;
  try {
    if (!isToolName(name)) {
      throw new InvalidArgumentError(
        `unknown tool '${name}'; the tools are ${TOOL_NAMES.join(', ')}`,
      );
    }
    const input = parseToolArguments(rawArguments);
    const { userId, threadId } = identityOf(options);
    const { config } = await loadCliConfig(options, io);
    const allowHostBash = options.allowHostBash === true ? true : undefined;
    provider = await withProgress(progress, `loading ${config.use}`, () =>
      openProvider(config, { logger, allowHostBash, importer }),
    );
    const sessionFile = cliToolSessionFile(config.baseDir, userId, threadId);
    const session = await loadCliToolSession(sessionFile, logger);
    const marksBefore = JSON.stringify(session.toJSON());
    const ctx = await toolContextFor(provider, config, {
      userId,
      threadId,
      logger,
      allowHostBash,
      signal,
      session,
    });
    context = ctx;
    const result = await withProgress(progress, `running ${name}`, () =>
      runToolCall(name, input, ctx),
    );
    if (JSON.stringify(session.toJSON()) !== marksBefore) {
      await saveCliToolSession(sessionFile, session, logger);
    }
    const sandboxId = ctx.state.sandboxId;
    const command = result.command ? { command: result.command } : {};
    if (options.json) {
      printJson(
        io,
        result.error
          ? { ok: false, tool: name, sandboxId, error: result.error, ...command }
          : { ok: true, tool: name, sandboxId, result: result.text, ...command },
      );
    } else {
      writeLine(io.stdout, result.text.replace(/\n$/, ''));
    }
    return toolExitCode(result);
  } catch (err) {
    progress.stop();
    reportFailure(io, options, err);
    return exitCodeFor(err);
  } finally {
    if (provider) await closeProviderSession(provider, context?.state.sandboxId, logger);
  }
}
