import { writeLine, type CliIo } from './cli-io.js';
import type { CliConfigOptions } from './cli-config.js';
import { exitCodeFor, printJson, reportFailure, type CommonOptions } from './command-result.js';
import type { CommandRuntime } from './command-runtime.js';
import {
  runDoctorChecks,
  type DoctorCheck,
  type DoctorOptions,
  type DoctorReport,
} from './doctor-checks.js';
import { ExitCode } from './exit-codes.js';
import { createProgress } from './progress.js';
import { formatTable } from './text-table.js';

export interface DoctorCommandOptions extends CommonOptions, CliConfigOptions {}

function statusLabel(check: DoctorCheck): string {
  if (check.status === 'ok') return 'ok';
  if (check.status === 'skip') return 'skip';
  // Upper case for what fails the run; lower case for packages that are installed but not used.
  return check.required ? 'FAIL' : 'fail';
}

/** The report as a table, each failure followed by its fix, then a one-line verdict. */
export function renderDoctorReport(report: DoctorReport): string[] {
  const rows = report.checks.map((c) => [
    statusLabel(c),
    c.group === 'sbx' ? c.title : `${c.group}: ${c.title}`,
    c.detail,
  ]);
  const [header, ...lines] = formatTable(['STATUS', 'CHECK', 'DETAIL'], rows);
  const indent = ' '.repeat(Math.max(...rows.map((r) => (r[0] ?? '').length), 'STATUS'.length) + 2);
  const out = [
    `sbx doctor: provider ${report.provider}, config ${report.configFile ?? '(built-in defaults)'}`,
    '',
    header ?? '',
  ];
  report.checks.forEach((check, i) => {
    out.push(lines[i] ?? '');
    if (check.status === 'fail' && check.fix) out.push(`${indent}fix: ${check.fix}`);
  });
  const requiredFailures = report.checks.filter((c) => c.required && c.status === 'fail').length;
  const otherFailures = report.checks.filter((c) => !c.required && c.status === 'fail').length;
  const others =
    otherFailures > 0
      ? ` (${otherFailures} failed ${otherFailures === 1 ? 'check concerns' : 'checks concern'} installed packages the configuration does not use)`
      : '';
  out.push('');
  out.push(
    requiredFailures > 0
      ? `${requiredFailures} required ${requiredFailures === 1 ? 'check' : 'checks'} failed${others}`
      : `all required checks passed${others}`,
  );
  return out;
}

/**
 * `sbx doctor`: exit 0 when every check the configured setup needs passes, 1 otherwise. Failures of
 * installed but unused provider packages are shown without failing the run.
 */
export async function doctorCommand(
  options: DoctorCommandOptions,
  runtime: CommandRuntime,
  probes: Omit<DoctorOptions, 'io' | 'config' | 'onProgress' | 'signal' | 'importer'> = {},
): Promise<number> {
  const { io, signal, importer } = runtime;
  const progress = createProgress(io.stderr, !options.json);
  try {
    const report = await runDoctorChecks({
      ...probes,
      io,
      config: options,
      signal,
      importer,
      onProgress: (label) => progress.update(label),
    });
    progress.stop();
    print(io, options, report);
    return report.ok ? ExitCode.OK : ExitCode.FAILURE;
  } catch (err) {
    progress.stop();
    reportFailure(io, options, err);
    return exitCodeFor(err);
  }
}

function print(io: CliIo, options: CommonOptions, report: DoctorReport): void {
  if (options.json) {
    printJson(io, report);
    return;
  }
  for (const line of renderDoctorReport(report)) writeLine(io.stdout, line);
}
