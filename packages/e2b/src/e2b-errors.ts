import type { E2BCommandResult } from './e2b-client.js';

/**
 * Classification of SDK failures by the SDK's error class names, so neither the provider nor tests
 * depend on the (lazily loaded, optional) SDK module identity.
 */

function errorName(error: unknown): string | undefined {
  return error instanceof Error ? error.name : undefined;
}

function lowerMessage(error: unknown): string {
  if (error instanceof Error) return error.message.toLowerCase();
  return String(error ?? '').toLowerCase();
}

// Message signatures of a VM the control plane no longer runs: the API's connect 404 ("Paused
// sandbox <id> not found"), the envd proxy's 502 body ("The sandbox was not found"), a plain
// "Sandbox <id> not found", and the process-start 502 ("Sandbox is probably not running anymore").
const GONE_SIGNATURES = [
  'sandbox was not found',
  'sandbox not found',
  'paused sandbox',
  'probably not running anymore',
];
// `TimeoutError`s that mean the VM itself timed out or died mid-request, as opposed to a request or
// command running past its own limit (which says nothing about the VM).
const TERMINAL_TIMEOUT_SIGNATURES = ['likely due to sandbox timeout', 'reached its end of life'];

/**
 * True when `error` says the VM is gone for good (killed, reaped by its idle timeout, or paused and
 * unresumable): the adapter is then dead and the provider drops it. Anything else — connection
 * resets, invalid paths, request timeouts — is not terminal.
 */
export function isSandboxGoneError(error: unknown): boolean {
  if (errorName(error) === 'SandboxNotFoundError') return true;
  const message = lowerMessage(error);
  if (GONE_SIGNATURES.some((s) => message.includes(s))) return true;
  return (
    errorName(error) === 'TimeoutError' &&
    TERMINAL_TIMEOUT_SIGNATURES.some((s) => message.includes(s))
  );
}

/** A `commands.run` rejection that is really a finished command with a non-zero exit. */
export function commandExitResult(error: unknown): E2BCommandResult | undefined {
  if (errorName(error) !== 'CommandExitError') return undefined;
  const e = error as Partial<E2BCommandResult>;
  if (typeof e.exitCode !== 'number') return undefined;
  return {
    exitCode: e.exitCode,
    stdout: typeof e.stdout === 'string' ? e.stdout : '',
    stderr: typeof e.stderr === 'string' ? e.stderr : '',
  };
}

/** The command ran past its own `timeoutMs` (envd `DeadlineExceeded`), the VM is fine. */
export function isCommandTimeoutError(error: unknown): boolean {
  return errorName(error) === 'TimeoutError' && lowerMessage(error).includes("'timeoutms'");
}

export function isFileNotFoundError(error: unknown): boolean {
  return errorName(error) === 'FileNotFoundError';
}

/** An SDK `InvalidArgumentError` (e.g. a `files.read` format the SDK does not know). */
export function isInvalidArgumentError(error: unknown): boolean {
  return errorName(error) === 'InvalidArgumentError';
}

export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  return String(error);
}
