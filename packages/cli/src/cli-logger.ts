import type { Logger } from '@sbx/core';
import { writeLine, type CliOutput } from './cli-io.js';

function formatFields(fields: Record<string, unknown> | undefined): string {
  if (!fields || Object.keys(fields).length === 0) return '';
  return ` ${JSON.stringify(fields)}`;
}

/**
 * The logger handed to providers and stores: one line per message on stderr (never stdout, which
 * carries results and, for `sbx mcp`, the protocol). Debug and info only with `--verbose`.
 */
export function stderrLogger(stream: CliOutput, verbose = false): Logger {
  const line =
    (level: string) =>
    (msg: string, fields?: Record<string, unknown>): void =>
      writeLine(stream, `sbx: ${level}: ${msg}${formatFields(fields)}`);
  const quiet = (): void => {};
  return {
    debug: verbose ? line('debug') : quiet,
    info: verbose ? line('info') : quiet,
    warn: line('warning'),
    error: line('error'),
  };
}
