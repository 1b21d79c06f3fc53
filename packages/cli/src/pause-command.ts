import type { Logger, SandboxProvider } from '@sbx/core';
import { CapabilityNotSupportedError, errorMessage } from '@sbx/core';
import { loadCliConfig } from './cli-config.js';
import { writeLine } from './cli-io.js';
import { stderrLogger } from './cli-logger.js';
import { exitCodeFor, printJson, reportFailure } from './command-result.js';
import { identityOf, type CommandRuntime, type ThreadCommandOptions } from './command-runtime.js';
import { ExitCode } from './exit-codes.js';
import { openProvider } from './provider-session.js';

/** `sbx pause [thread]` / `sbx resume [thread]`: the positional thread wins over `--thread`. */
export type PauseOptions = ThreadCommandOptions;

type Direction = 'pause' | 'resume';

/**
 * Hands the provider over without stopping anything (its reset contract): a shutdown would stop the
 * sandbox this command just paused, and the gateway that serves the thread finds it again by its
 * id (and resumes it on its next acquire).
 */
async function handOver(provider: SandboxProvider, logger: Logger): Promise<void> {
  try {
    await provider.reset();
  } catch (err) {
    logger.error('handing the provider over failed', { error: errorMessage(err) });
  }
}

async function run(
  direction: Direction,
  thread: string | undefined,
  options: PauseOptions,
  runtime: CommandRuntime,
): Promise<number> {
  const { io, importer } = runtime;
  const logger = stderrLogger(io.stderr, options.verbose);
  let provider: SandboxProvider | undefined;
  try {
    const { config } = await loadCliConfig(options, io);
    provider = await openProvider(config, { logger, importer, background: false });
    const identity = identityOf({ ...options, ...(thread !== undefined ? { thread } : {}) });
    // Refused typed (CAPABILITY_NOT_SUPPORTED) before anything is acquired where the provider
    // cannot pause: the acquire would create a sandbox only to refuse it.
    if (!provider.lifecycleSupport.pause) {
      throw CapabilityNotSupportedError.lifecycle(config.use, direction);
    }
    // The acquire finds the thread's sandbox (and resumes a paused one, transparently).
    const sandboxId = await provider.acquire(identity);
    if (direction === 'pause') await provider.pause(sandboxId);
    const result = { sandboxId, ...identity, state: direction === 'pause' ? 'paused' : 'running' };
    if (options.json) printJson(io, { ok: true, ...result });
    else writeLine(io.stdout, `${sandboxId}: ${result.state}`);
    return ExitCode.OK;
  } catch (err) {
    reportFailure(io, options, err);
    return exitCodeFor(err);
  } finally {
    if (provider) await handOver(provider, logger);
  }
}

/** `sbx pause`: the thread's sandbox suspended with its processes, its ownership handed over. */
export function pauseCommand(
  thread: string | undefined,
  options: PauseOptions,
  runtime: CommandRuntime,
): Promise<number> {
  return run('pause', thread, options, runtime);
}

/** `sbx resume`: the thread's sandbox running again (an acquire resumes a paused one). */
export function resumeCommand(
  thread: string | undefined,
  options: PauseOptions,
  runtime: CommandRuntime,
): Promise<number> {
  return run('resume', thread, options, runtime);
}
