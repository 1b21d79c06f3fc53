/**
 * One decision of the egress proxy: a request of `sandboxId` (for `threadId`) to `host:port`,
 * allowed or denied and why. Emitted for every request the proxy read a target of, and for every
 * connection refused before that (`host` empty).
 *
 * Reasons: `allowed`, `open`, `approved` (by `onEgressRequest`); `mode-none`, `denied`,
 * `not-allowed`, `ip-literal`, `blocked-address:<class>` (loopback, private, link-local, ...),
 * `resolve-failed`, `sni-mismatch`, `no-sni`, `not-tls`, `host-mismatch`, `bad-request`,
 * `header-too-large`, `header-timeout`, `connection-limit`, `upstream-failed`.
 */
export interface EgressDecisionEvent {
  readonly type: 'egress-decision';
  readonly sandboxId: string;
  readonly threadId: string | undefined;
  readonly method: 'CONNECT' | 'HTTP' | 'unknown';
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
