import type { NetworkPolicy } from './network-policy.js';

/** What a provider asks of the egress gateway for one sandbox. */
export interface EgressGatewayRequest {
  readonly sandboxId: string;
  readonly threadId?: string | undefined;
  readonly userId?: string | undefined;
  /** The effective policy (already narrowed, see `narrowNetworkPolicy`). */
  readonly policy: NetworkPolicy;
  /**
   * The host user that must reach the socket when it is not the gateway's own (a root gateway's
   * unprivileged sandbox user): the socket and its private directory are handed to it.
   */
  readonly socketOwner?: { readonly uid: number; readonly gid: number } | undefined;
}

/**
 * One sandbox's way out: a unix socket that only this sandbox is given, behind which the gateway
 * enforces the sandbox's policy. Whatever connects to the socket is that sandbox (no token).
 */
export interface EgressAttachment {
  /** The socket the gateway listens on for this sandbox (the provider binds it into the sandbox). */
  readonly socketPath: string;
  /**
   * Variables every command of the sandbox gets besides the proxy variables (placeholders of
   * brokered credentials); may be empty. Never a secret: the sandbox may read and leak them.
   */
  readonly env: Readonly<Record<string, string>>;
  /** The CA the sandbox must trust when the gateway terminates TLS to broker credentials. */
  readonly caCertificatePem?: string | undefined;
  /** Stops the listener and ends the sandbox's open connections. Idempotent. */
  close(): Promise<void>;
}

/**
 * The egress proxy as a provider sees it (`@sbx/egress` implements it). A provider that can give a
 * sandbox no route out but this socket passes it in and enforces every network policy with it.
 */
export interface EgressGateway {
  /**
   * Whether the gateway brokers `credentials` (puts the secret into the configured header); one
   * that does not makes a policy with credentials unenforceable.
   */
  readonly brokersCredentials: boolean;
  /** Opens `request.sandboxId`'s listener; one per sandbox at a time. */
  open(request: EgressGatewayRequest): Promise<EgressAttachment>;
}
