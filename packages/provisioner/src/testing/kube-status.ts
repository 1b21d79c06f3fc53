// The API server's `Status` answers, as the stand-in sends them: the body a client turns into its
// error (404 NotFound, 409 AlreadyExists, 422 Invalid with one cause per field, an injected 429 or
// 503), so the provisioner meets the same shapes it meets from a cluster.

import { invalidMessage } from '../kube-rules.js';
import type { KubeCause } from '../kube-rules.js';

/** A `Status` failure body. */
export function kubeStatus(
  code: number,
  reason: string,
  message: string,
  details?: Record<string, unknown>,
) {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    ...(details ? { details } : {}),
    code,
  };
}

/** The server's 422: `<Kind> "<name>" is invalid: ...`, with one cause per refused field. */
export function invalidStatus(
  kind: string,
  group: string,
  name: string,
  causes: readonly KubeCause[],
) {
  return kubeStatus(422, 'Invalid', invalidMessage(kind, name, causes), {
    name,
    ...(group ? { group } : {}),
    kind,
    causes: causes.map((c) => ({ reason: c.reason, message: c.message, field: c.field })),
  });
}

const REASONS: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  409: 'AlreadyExists',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
};

/** The answer of an injected fault, with the reason the server gives that code. */
export function injectedStatus(code: number) {
  const reason = REASONS[code] ?? 'Unknown';
  return kubeStatus(code, reason, `injected ${reason}`);
}
