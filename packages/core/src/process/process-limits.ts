import { MAX_TIMER_SECONDS } from '../config/config-schema.js';
import type { SandboxCapabilities } from '../contract/sandbox-exec.js';
import { InvalidArgumentError } from '../errors/errors.js';
import { CapabilityNotSupportedError } from '../errors/capability-errors.js';

/** Longest command text a sandbox accepts (256 KiB): beyond that it is data, not a command. */
export const MAX_COMMAND_BYTES = 256 * 1024;

export function assertCommandText(command: unknown): asserts command is string {
  if (typeof command !== 'string' || command.trim() === '') {
    throw new InvalidArgumentError('command must be a non-empty string');
  }
  const size = Buffer.byteLength(command, 'utf8');
  if (size > MAX_COMMAND_BYTES) {
    throw new InvalidArgumentError(
      `command is ${size} bytes; the limit is ${MAX_COMMAND_BYTES} (write long scripts to a file and run the file)`,
    );
  }
}

export function assertProcessTimeout(value: unknown, name = 'timeoutMs'): asserts value is number {
  const max = MAX_TIMER_SECONDS * 1000;
  if (!(typeof value === 'number' && Number.isFinite(value) && value > 0 && value <= max)) {
    throw new InvalidArgumentError(
      `${name} must be a positive number up to ${max}, got ${String(value)}`,
    );
  }
}

/** Refuses, before anything runs, what a sandbox's capabilities rule out for `exec`. */
export function assertExecSupported(
  capabilities: SandboxCapabilities,
  options: { stdin?: unknown },
): void {
  if (options.stdin === undefined) return;
  if (!capabilities.stdin) {
    throw new CapabilityNotSupportedError(
      'stdin',
      'This sandbox cannot feed a command standard input (sandbox.capabilities.stdin is false)',
    );
  }
  if (!(typeof options.stdin === 'string' || options.stdin instanceof Uint8Array)) {
    throw new InvalidArgumentError('stdin must be a string or bytes');
  }
  const size =
    typeof options.stdin === 'string'
      ? Buffer.byteLength(options.stdin, 'utf8')
      : options.stdin.length;
  if (size > MAX_EXEC_STDIN_BYTES) {
    throw new InvalidArgumentError(
      `stdin is ${size} bytes; exec takes at most ${MAX_EXEC_STDIN_BYTES} (upload a file and redirect it instead)`,
    );
  }
}

/** Largest `exec({ stdin })` (8 MiB). */
export const MAX_EXEC_STDIN_BYTES = 8 * 1024 * 1024;
