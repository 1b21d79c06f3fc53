import { SandboxRuntimeError } from '@sbx/core';
import type { SbxErrorOptions } from '@sbx/core';

/**
 * A request to a sandbox container's (or the provisioner's) HTTP API failed: no answer, a non-2xx
 * status, or a body that is not what the API documents. `status` is the HTTP status when there was
 * one; `responseText` the start of the body.
 */
export class AioHttpError extends SandboxRuntimeError {
  readonly method: string;
  readonly url: string;
  readonly status: number | undefined;
  readonly responseText: string | undefined;

  constructor(
    message: string,
    init: { method: string; url: string; status?: number; responseText?: string },
    options: SbxErrorOptions = {},
  ) {
    super(message, options);
    this.method = init.method;
    this.url = init.url;
    this.status = init.status;
    this.responseText = init.responseText;
  }
}

/** True for an `AioHttpError` carrying HTTP status `status`. */
export function isHttpStatus(err: unknown, status: number): boolean {
  return err instanceof AioHttpError && err.status === status;
}
