import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import {
  CapabilityNotSupportedError,
  InvalidArgumentError,
  checkpointLimitsOf,
  readCheckpoint,
  writeCheckpoint,
  type SandboxConfig,
  type SandboxProvider,
  type SnapshotRef,
} from '@sbx/core';
import { loadCliConfig } from './cli-config.js';
import { writeLine } from './cli-io.js';
import { stderrLogger } from './cli-logger.js';
import { exitCodeFor, printJson, reportFailure } from './command-result.js';
import { identityOf, type CommandRuntime, type ThreadCommandOptions } from './command-runtime.js';
import { ExitCode } from './exit-codes.js';
import { isHostDirectoryProvider } from './host-directory-provider.js';
import { closeProviderSession, openProvider } from './provider-session.js';

export interface SnapshotExportOptions extends ThreadCommandOptions {
  output: string;
}

export interface SnapshotImportOptions extends ThreadCommandOptions {
  input: string;
}

export interface ForkOptions extends ThreadCommandOptions {
  from: string;
}

type Work = (
  provider: SandboxProvider,
  use: string,
  config: SandboxConfig,
) => Promise<Record<string, unknown>>;

/** Opens the configured provider, runs `work`, prints its result (text: `key: value` lines). */
async function withProvider(
  options: ThreadCommandOptions,
  runtime: CommandRuntime,
  work: Work,
): Promise<number> {
  const { io, importer } = runtime;
  const logger = stderrLogger(io.stderr, options.verbose);
  let provider: SandboxProvider | undefined;
  try {
    const { config } = await loadCliConfig(options, io);
    provider = await openProvider(config, { logger, importer, background: false });
    const result = await work(provider, config.use, config);
    if (options.json) printJson(io, { ok: true, ...result });
    else for (const [k, v] of Object.entries(result)) writeLine(io.stdout, `${k}: ${String(v)}`);
    return ExitCode.OK;
  } catch (err) {
    reportFailure(io, options, err);
    return exitCodeFor(err);
  } finally {
    if (provider) await closeProviderSession(provider, undefined, logger);
  }
}

/** The thread's data directories, on a provider whose sandboxes are host directories. */
function hostThread(
  provider: SandboxProvider,
  use: string,
  options: ThreadCommandOptions,
): { workspace: string; uploads: string; outputs: string } {
  if (!isHostDirectoryProvider(provider)) {
    throw CapabilityNotSupportedError.lifecycle(
      use,
      'snapshot',
      'export and import of a workspace reach thread data on this host only (the local provider)',
    );
  }
  const { userId, threadId } = identityOf(options);
  const data = provider.threadData(userId, threadId);
  const { workspacePath, uploadsPath, outputsPath } = data;
  if (!workspacePath || !uploadsPath || !outputsPath) {
    throw new InvalidArgumentError(`provider ${use} does not name all three thread directories`);
  }
  return { workspace: workspacePath, uploads: uploadsPath, outputs: outputsPath };
}

/** `sbx snapshot export`: the thread's workspace, uploads and outputs as a checkpoint archive. */
export function snapshotExportCommand(
  options: SnapshotExportOptions,
  runtime: CommandRuntime,
): Promise<number> {
  return withProvider(options, runtime, async (provider, use, config) => {
    const dirs = hostThread(provider, use, options);
    const output = path.resolve(options.output);
    // Written beside the target and renamed once complete: a refused export leaves no archive.
    const partial = `${output}.partial`;
    try {
      const summary = await writeCheckpoint(
        dirs,
        createWriteStream(partial, { flags: 'wx', mode: 0o600 }),
        {
          limits: checkpointLimitsOf(config.checkpoint),
          ...(runtime.signal ? { signal: runtime.signal } : {}),
        },
      );
      await rename(partial, output);
      return { output, ...summary, skipped: summary.skipped.map((s) => `${s.path} (${s.reason})`) };
    } catch (err) {
      await rm(partial, { force: true });
      throw err;
    }
  });
}

/** `sbx snapshot import`: an archive (untrusted) as the data of a thread that has none yet. */
export function snapshotImportCommand(
  options: SnapshotImportOptions,
  runtime: CommandRuntime,
): Promise<number> {
  return withProvider(options, runtime, async (provider, use, config) => {
    const dirs = hostThread(provider, use, options);
    const userData = path.dirname(dirs.workspace);
    if (path.dirname(dirs.uploads) !== userData || path.dirname(dirs.outputs) !== userData) {
      throw new InvalidArgumentError('the thread directories of this provider share no parent');
    }
    // The thread's directory is made for the import and removed again if the import is refused.
    const made = await mkdir(path.dirname(userData), { recursive: true });
    let summary;
    try {
      summary = await readCheckpoint(createReadStream(path.resolve(options.input)), userData, {
        limits: checkpointLimitsOf(config.checkpoint),
        ...(runtime.signal ? { signal: runtime.signal } : {}),
      });
    } catch (err) {
      if (made !== undefined) await rm(made, { recursive: true, force: true });
      throw err;
    }
    return { ...summary };
  });
}

/** `sbx snapshot create`: the provider's own snapshot of the thread's sandbox. */
export function snapshotCreateCommand(
  options: ThreadCommandOptions,
  runtime: CommandRuntime,
): Promise<number> {
  return withProvider(options, runtime, async (provider) => {
    const sandboxId = await provider.acquire(identityOf(options));
    const ref = await provider.snapshot(sandboxId);
    return { sandboxId, snapshot: JSON.stringify(ref) };
  });
}

/** `sbx fork`: a snapshot of thread `--from`, acquired as thread `--thread`. */
export function forkCommand(options: ForkOptions, runtime: CommandRuntime): Promise<number> {
  return withProvider(options, runtime, async (provider) => {
    const { userId, threadId } = identityOf(options);
    const source = await provider.acquire({ userId, threadId: options.from });
    const ref: SnapshotRef = await provider.snapshot(source);
    const fork = await provider.acquire({ userId, threadId, fromSnapshot: ref });
    return { source, sandboxId: fork, snapshot: JSON.stringify(ref) };
  });
}
