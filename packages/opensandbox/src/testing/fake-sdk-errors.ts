import { MachineFileError } from './host-shell-machine.js';

// The errors the OpenSandbox SDK throws, shaped as the adapter's classification reads them (name,
// status code, cause), for the fake SDK and the tests that inject failures.

/** An error shaped like the SDK's `SandboxApiException` (classification reads name and status). */
export function fakeApiError(statusCode: number, message: string, rawBody?: unknown): Error {
  const error = new Error(message);
  error.name = 'SandboxApiException';
  return Object.assign(error, { statusCode, rawBody });
}

export function fakeUnhealthyError(message = 'sandbox is unhealthy'): Error {
  const error = new Error(message);
  error.name = 'SandboxUnhealthyException';
  return error;
}

/** What `fetch` throws when nothing listens: `TypeError: fetch failed` caused by ECONNREFUSED. */
export function fakeConnectionError(code = 'ECONNREFUSED'): Error {
  const cause = Object.assign(new Error(`connect ${code} 127.0.0.1:44772`), { code });
  return new TypeError('fetch failed', { cause });
}

/** The lifecycle API's answer for a sandbox that does not exist (any more). */
export function sandboxNotFound(id: string): Error {
  return fakeApiError(404, `Sandbox ${id} not found`, {
    code: 'NOT_FOUND',
    message: `Sandbox ${id} not found`,
  });
}

/** A machine's file error as the SDK reports execd's answer; anything else as it is. */
export function apiErrorOf(error: unknown): unknown {
  if (error instanceof MachineFileError) {
    return fakeApiError(error.status, error.message, { code: error.code, message: error.message });
  }
  return error;
}
