import { runDemo } from '@sbx/local';
import { writeLine } from './cli-io.js';
import { exitCodeFor, printJson, reportFailure, type CommonOptions } from './command-result.js';
import type { CommandRuntime } from './command-runtime.js';
import { ExitCode } from './exit-codes.js';

/**
 * `sbx demo`: the scripted agent session of @sbx/local (what `npm run demo` runs). Data goes to
 * `SBX_HOME` when set (and is kept), else to a temporary directory removed afterwards.
 */
export async function demoCommand(
  options: CommonOptions,
  runtime: CommandRuntime,
): Promise<number> {
  const { io } = runtime;
  const lines: string[] = [];
  const home = io.env.SBX_HOME;
  try {
    await runDemo({
      write: options.json ? (line) => lines.push(line) : (line) => writeLine(io.stdout, line),
      ...(home ? { baseDir: home } : {}),
    });
    if (options.json) printJson(io, { ok: true, lines });
    return ExitCode.OK;
  } catch (err) {
    reportFailure(io, options, err);
    return exitCodeFor(err);
  }
}
