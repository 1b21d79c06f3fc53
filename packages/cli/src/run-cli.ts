import { CommanderError } from 'commander';
import type { ModuleImporter } from '@sbx/core';
import { processIo, type CliIo } from './cli-io.js';
import { ExitCode } from './exit-codes.js';
import { buildProgram } from './program.js';

export interface RunCliOptions {
  /** Replaces parts of the process's streams, environment and working directory. */
  io?: Partial<CliIo>;
  /** Aborts the running command (the `sbx` executable ties it to SIGINT/SIGTERM). */
  signal?: AbortSignal;
  /** How provider packages are imported (default: dynamic `import()`); for tests and bundlers. */
  importer?: ModuleImporter;
}

/**
 * Runs `sbx` with `argv` (the arguments after the executable, e.g. `['exec', '--', 'ls']`) and
 * resolves to the exit status; never calls `process.exit`.
 */
export async function runCli(
  argv: readonly string[],
  options: RunCliOptions = {},
): Promise<number> {
  const io: CliIo = { ...processIo(), ...options.io };
  const exit = { code: ExitCode.OK as number };
  const program = buildProgram({ io, signal: options.signal, importer: options.importer }, exit);
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return exit.code;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Help and version exit 0; anything else commander rejects is a usage error.
      return err.exitCode === 0 ? ExitCode.OK : ExitCode.USAGE;
    }
    throw err;
  }
}
