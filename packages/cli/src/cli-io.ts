import type { Readable, Writable } from 'node:stream';

/** A stream the CLI writes text to; `isTTY` decides between progress display and quiet output. */
export type CliOutput = Writable & { isTTY?: boolean };

/**
 * Everything the CLI touches of its process, injectable so commands run in-process in tests with a
 * private environment (e.g. a temporary `SBX_HOME`) and captured output.
 */
export interface CliIo {
  readonly stdout: CliOutput;
  readonly stderr: CliOutput;
  /** Read by `sbx mcp` (the stdio transport). */
  readonly stdin: Readable;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
}

export function processIo(): CliIo {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
    env: process.env,
    cwd: process.cwd(),
  };
}

export function writeLine(stream: CliOutput, line = ''): void {
  stream.write(`${line}\n`);
}
