import { SbxError } from '@sbx/core';
import type { SbxErrorOptions } from '@sbx/core';

/**
 * A request the provisioner refuses or cannot serve, with the HTTP status it answers and the
 * `detail` text the response carries (the reference API's error shape, `{"detail": "..."}`).
 */
export class ProvisionerHttpError extends SbxError {
  static override readonly CODE: string = 'PROVISIONER_HTTP';
  readonly status: number;
  /** A string, or the list of field problems of a 422. */
  readonly detail: string | readonly FieldProblem[];
  /** Sent as `Retry-After`: the request may succeed when repeated after this many seconds. */
  readonly retryAfterSeconds: number | undefined;

  constructor(
    status: number,
    detail: string | readonly FieldProblem[],
    options: SbxErrorOptions & { retryAfterSeconds?: number } = {},
  ) {
    super(typeof detail === 'string' ? detail : describeProblems(detail), options);
    this.status = status;
    this.detail = detail;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

/** One field of a request body that failed validation (`loc` is the path into the body). */
export interface FieldProblem {
  loc: (string | number)[];
  msg: string;
}

function describeProblems(problems: readonly FieldProblem[]): string {
  return `invalid request: ${problems.map((p) => `${p.loc.join('.') || 'body'}: ${p.msg}`).join('; ')}`;
}

/** A Kubernetes API call failed: `status` is the HTTP status (0 when no answer came). */
export class KubeApiError extends SbxError {
  static override readonly CODE: string = 'KUBE_API';
  readonly status: number;
  /** The Status object's `reason` (`NotFound`, `AlreadyExists`, `Invalid`, ...), when given. */
  readonly reason: string | undefined;

  constructor(
    status: number,
    reason: string | undefined,
    message: string,
    options: SbxErrorOptions = {},
  ) {
    super(message, options);
    this.status = status;
    this.reason = reason;
  }
}

export function isKubeStatus(err: unknown, status: number): boolean {
  return err instanceof KubeApiError && err.status === status;
}
