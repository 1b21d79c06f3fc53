// `SANDBOX_EGRESS_PROXY`: which Service the sandboxes' egress goes through, as `<service>:<port>`.

import { dns1035LabelProblem } from './kube-rules.js';

export interface EgressProxyRef {
  /** A Service in the sandbox namespace. */
  service: string;
  /** One of its `spec.ports[].port`. */
  port: number;
}

/** The problem with `value` as `<service>:<port>`, or undefined. */
export function egressProxyProblem(value: string): string | undefined {
  const at = value.lastIndexOf(':');
  if (at <= 0) return 'no :<port>';
  const nameProblem = dns1035LabelProblem(value.slice(0, at));
  if (nameProblem) return `the Service name: ${nameProblem}`;
  const port = value.slice(at + 1);
  const n = /^[0-9]{1,5}$/.test(port) ? Number(port) : NaN;
  if (!(n >= 1 && n <= 65_535)) return 'the port must be an integer in 1..65535';
  return undefined;
}

/** The checked setting, split; undefined when it is empty (no proxy). */
export function egressProxyRef(value: string): EgressProxyRef | undefined {
  if (value === '') return undefined;
  const problem = egressProxyProblem(value);
  if (problem) throw new TypeError(`SANDBOX_EGRESS_PROXY ${problem}`);
  const at = value.lastIndexOf(':');
  return { service: value.slice(0, at), port: Number(value.slice(at + 1)) };
}
