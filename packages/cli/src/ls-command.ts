import { InvalidArgumentError, type SandboxProvider } from '@sbx/core';
import { loadCliConfig } from './cli-config.js';
import { writeLine } from './cli-io.js';
import { stderrLogger } from './cli-logger.js';
import { exitCodeFor, printJson, reportFailure } from './command-result.js';
import type { CommandRuntime, ProviderCommandOptions } from './command-runtime.js';
import { ExitCode } from './exit-codes.js';
import { createProgress, withProgress } from './progress.js';
import { closeProviderSession, openProvider } from './provider-session.js';
import { listSandboxesOf } from './sandbox-listing.js';
import { formatTable } from './text-table.js';

export interface LsOptions extends ProviderCommandOptions {
  /** `key=value` filters: a sandbox must carry every one among its spec labels. */
  label?: string[];
}

/** Parses `--label key=value` filters; a malformed one is a usage error. */
export function parseLabelFilters(filters: readonly string[] = []): [string, string][] {
  return filters.map((filter) => {
    const eq = filter.indexOf('=');
    if (eq <= 0) {
      throw new InvalidArgumentError(`--label needs key=value, got ${JSON.stringify(filter)}`);
    }
    return [filter.slice(0, eq), filter.slice(eq + 1)];
  });
}

/**
 * `sbx ls` / `sbx ps`: the sandboxes the configured provider knows (see `SandboxListingProvider`;
 * for the host provider, every thread directory under its data directory). A provider that cannot
 * list is reported as such, with exit status 0: there is nothing wrong, only nothing to show.
 */
export async function lsCommand(options: LsOptions, runtime: CommandRuntime): Promise<number> {
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
    const filters = parseLabelFilters(options.label);
    const listed = await withProgress(progress, 'listing sandboxes', () =>
      listSandboxesOf(opened, signal ? { signal } : {}),
    );
    const sandboxes = listed?.filter((s) => filters.every(([k, v]) => s.labels?.[k] === v));
    if (options.json) {
      printJson(io, {
        ok: true,
        provider: config.use,
        supported: sandboxes !== undefined,
        sandboxes: sandboxes ?? [],
      });
      return ExitCode.OK;
    }
    if (sandboxes === undefined) {
      writeLine(
        io.stderr,
        `sbx: provider ${config.use} does not list its sandboxes (no listSandboxes())`,
      );
      return ExitCode.OK;
    }
    if (sandboxes.length === 0) {
      writeLine(io.stderr, `sbx: no sandboxes (provider ${config.use})`);
      return ExitCode.OK;
    }
    // The labels column appears only when some sandbox has labels.
    const withLabels = sandboxes.some((s) => s.labels && Object.keys(s.labels).length > 0);
    const rows = sandboxes.map((s) => [
      s.id,
      s.userId ?? '-',
      s.threadId ?? '-',
      s.state ?? '-',
      s.updatedAt ?? '-',
      s.location ?? '-',
      ...(withLabels
        ? [
            Object.entries(s.labels ?? {})
              .map(([k, v]) => `${k}=${v}`)
              .join(',') || '-',
          ]
        : []),
    ]);
    const header = ['ID', 'USER', 'THREAD', 'STATE', 'UPDATED', 'LOCATION'];
    for (const line of formatTable(withLabels ? [...header, 'LABELS'] : header, rows)) {
      writeLine(io.stdout, line);
    }
    return ExitCode.OK;
  } catch (err) {
    progress.stop();
    reportFailure(io, options, err);
    return exitCodeFor(err);
  } finally {
    if (provider) await closeProviderSession(provider, undefined, logger);
  }
}
