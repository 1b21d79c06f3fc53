import {
  ConfigError,
  InvalidArgumentError,
  errorMessage,
  isSbxError,
  type ConfigIssue,
} from '@sbx/core';
import { writeLine, type CliIo } from './cli-io.js';
import { ExitCode } from './exit-codes.js';

/** Options every command accepts. */
export interface CommonOptions {
  json?: boolean;
}

/** What `--json` prints for a failure: one object, so consumers parse stdout in every case. */
export interface JsonFailure {
  ok: false;
  error: {
    code: string;
    message: string;
    issues?: readonly { path: string; message: string }[];
  };
}

export function printJson(io: CliIo, value: unknown): void {
  writeLine(io.stdout, JSON.stringify(value, null, 2));
}

/**
 * The issues of a `ConfigError` (core's or @sbx/authz's), recognised by code so that a duplicated
 * @sbx/core in the dependency tree still counts; `undefined` for any other value.
 */
export function configIssuesOf(err: unknown): readonly ConfigIssue[] | undefined {
  if (!isSbxError(err, ConfigError.CODE)) return undefined;
  const issues = (err as { issues?: unknown }).issues;
  return Array.isArray(issues) ? (issues as ConfigIssue[]) : [];
}

export function describeFailure(err: unknown): JsonFailure['error'] {
  const issues = configIssuesOf(err);
  if (isSbxError(err) && issues) return { code: err.code, message: err.message, issues };
  if (isSbxError(err)) return { code: err.code, message: err.message };
  return { code: 'UNEXPECTED', message: errorMessage(err) };
}

/** A rejected argument (by code, so a duplicated @sbx/core still counts). */
export function isUsageError(err: unknown): boolean {
  return InvalidArgumentError.is(err);
}

/**
 * The exit status of a failure that stopped a command: a rejected argument is a usage error, an
 * invalid configuration a failed check, everything else means sbx could not do the work.
 */
export function exitCodeFor(err: unknown): number {
  if (isUsageError(err)) return ExitCode.USAGE;
  if (configIssuesOf(err)) return ExitCode.FAILURE;
  return ExitCode.UNAVAILABLE;
}

/** Reports a failure (JSON on stdout with `--json`, a message on stderr otherwise). */
export function reportFailure(io: CliIo, options: CommonOptions, err: unknown): void {
  const failure = describeFailure(err);
  if (options.json) {
    printJson(io, { ok: false, error: failure } satisfies JsonFailure);
    return;
  }
  writeLine(io.stderr, `sbx: ${failure.message}`);
}
