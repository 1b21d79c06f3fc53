import { canReapOrphans } from '@sbx/core';
import type { SandboxProvider } from '@sbx/core';
import { loadCliConfig } from './cli-config.js';
import { writeLine } from './cli-io.js';
import { stderrLogger } from './cli-logger.js';
import { exitCodeFor, printJson, reportFailure } from './command-result.js';
import type { CommandRuntime, ProviderCommandOptions } from './command-runtime.js';
import { ExitCode } from './exit-codes.js';
import { createProgress, withProgress } from './progress.js';
import { closeProviderSession, openProvider } from './provider-session.js';

export interface GcOptions extends ProviderCommandOptions {
  dryRun?: boolean;
}

/**
 * `sbx gc`: asks the provider to reap orphaned sandboxes under its own rules (see
 * `OrphanCollectingProvider`): ownership-store rules for container and VM providers, idle thread
 * directories (`sandbox.local.thread_max_age_days`) for the host provider. Providers without the
 * capability have nothing the CLI could safely collect; that is reported and is not an error.
 */
export async function gcCommand(options: GcOptions, runtime: CommandRuntime): Promise<number> {
  const { io, signal, importer } = runtime;
  const logger = stderrLogger(io.stderr, options.verbose);
  const progress = createProgress(io.stderr, !options.json);
  let provider: SandboxProvider | undefined;
  try {
    const { config } = await loadCliConfig(options, io);
    const opened = await withProgress(progress, `loading ${config.use}`, () =>
      openProvider(config, { logger, importer, background: false }),
    );
    provider = opened;
    if (!canReapOrphans(opened)) {
      if (options.json) {
        printJson(io, { ok: true, provider: config.use, supported: false, reaped: [], kept: [] });
      } else {
        writeLine(
          io.stdout,
          `provider ${config.use} exposes no orphan collection (no reapOrphans()): nothing to collect`,
        );
      }
      return ExitCode.OK;
    }
    const dryRun = options.dryRun === true;
    const report = await withProgress(progress, 'reaping orphaned sandboxes', () =>
      opened.reapOrphans({ dryRun, ...(signal ? { signal } : {}) }),
    );
    if (options.json) {
      printJson(io, {
        ok: true,
        provider: config.use,
        supported: true,
        dryRun,
        reaped: report.reaped,
        kept: report.kept,
      });
      return ExitCode.OK;
    }
    const verb = dryRun ? 'would reap' : 'reaped';
    for (const id of report.reaped) writeLine(io.stdout, `${verb} ${id}`);
    for (const { id, reason } of report.kept) writeLine(io.stdout, `kept ${id}: ${reason}`);
    writeLine(io.stdout, `${report.reaped.length} ${verb}, ${report.kept.length} kept`);
    return ExitCode.OK;
  } catch (err) {
    progress.stop();
    reportFailure(io, options, err);
    return exitCodeFor(err);
  } finally {
    if (provider) await closeProviderSession(provider, undefined, logger);
  }
}
