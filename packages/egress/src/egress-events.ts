/** `HTTPS`: one request inside an intercepted CONNECT tunnel. */
export type EgressMethod = 'CONNECT' | 'HTTP' | 'HTTPS' | 'unknown';

/**
 * One decision of the egress proxy: a request of `sandboxId` (for `threadId`) to `host:port`,
 * allowed or denied and why. Emitted for every request the proxy read a target of, and for every
 * connection refused before that (`host` empty).
 *
 * Reasons: `allowed`, `open`, `approved` (by `onEgressRequest`); `mode-none`, `denied`,
 * `not-allowed`, `ip-literal`, `blocked-address:<class>` (loopback, private, link-local, ...),
 * `resolve-failed`, `sni-mismatch`, `no-sni`, `not-tls`, `host-mismatch`, `bad-request`,
 * `header-too-large`, `header-timeout`, `connection-limit`, `upstream-failed`.
 *
 * Brokering (see docs/egress.md): `credential-swapped` (allowed, a placeholder was replaced by its
 * secret); `placeholder-in-header`, `placeholder-in-request-line`, `placeholder-in-body`,
 * `placeholder-in-connect` (a placeholder sent where it is not swapped), `credential-over-cleartext`,
 * `upgrade-refused`, `trailers-refused`, `secret-unavailable`, `upstream-tls-failed`,
 * `client-tls-failed`, `certificate-failed`. Never the placeholder or the secret itself.
 */

export interface EgressDecisionEvent {
  readonly type: 'egress-decision';
  readonly sandboxId: string;
  readonly threadId: string | undefined;
  readonly method: EgressMethod;
  readonly host: string;
  readonly port: number;
  readonly verdict: 'allow' | 'deny';
  readonly reason: string;
}

export type EgressEvent = EgressDecisionEvent;

export type EgressEventListener = (event: EgressEvent) => void;

/** What the proxy did, for audit logs and metrics (the style of `SandboxProviderEvents`). */
export interface EgressEvents {
  /** Subscribes `listener` to every later event; the returned function unsubscribes it. */
  onEvent(listener: EgressEventListener): () => void;
}
