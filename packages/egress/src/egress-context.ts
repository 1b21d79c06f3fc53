/**
 * What the proxy's request handlers (CONNECT tunnel, TLS interception, plain-HTTP forwarding)
 * share with the proxy: one sandbox's state, the resolved limits, and the decision and event
 * plumbing. Handlers get this and nothing else, so every path decides and reports the same way.
 */
import type { Server, Socket } from 'node:net';
import type { Logger, NetworkPolicy } from '@sbx/core';
import type { CredentialBroker } from './credential-broker.js';
import type { EgressCertificateAuthority } from './egress-certificate-authority.js';
import type { EgressMethod } from './egress-events.js';
import type { Refusal } from './egress-refusal.js';

export interface EgressResolvedLimits {
  readonly maxHeaderBytes: number;
  readonly maxConnectionsPerSandbox: number;
  readonly headerTimeoutMs: number;
  readonly idleTimeoutMs: number;
  readonly resolveTimeoutMs: number;
  readonly approvalTimeoutMs: number;
  readonly maxApprovalsPerSandbox: number;
  readonly maxSecretBytes: number;
  readonly secretTimeoutMs: number;
  readonly maxBrokeredSecretsPerSandbox: number;
}

export interface SandboxState {
  readonly sandboxId: string;
  readonly threadId: string | undefined;
  readonly policy: NetworkPolicy;
  readonly sockets: Set<Socket>;
  readonly approved: Set<string>;
  readonly server: Server;
  /** Present when this sandbox's requests are brokered (it holds placeholders). */
  readonly broker: CredentialBroker | undefined;
}

/** An admitted request: the checked address to connect to, and why it was allowed. */
export interface Admitted {
  readonly address: string;
  readonly reason: string;
}

export interface EgressContext {
  readonly limits: EgressResolvedLimits;
  readonly logger: Logger;
  readonly certificateAuthority: EgressCertificateAuthority | undefined;
  /** CA certificates upstreams are verified against; `undefined` is Node's system roots. */
  readonly upstreamCa: readonly string[] | undefined;
  /** Whether a brokering sandbox's every CONNECT is intercepted, not only credential hosts. */
  readonly interceptAllHosts: boolean;
  decide(
    state: SandboxState,
    method: EgressMethod,
    host: string,
    port: number,
    verdict: 'allow' | 'deny',
    reason: string,
  ): void;
  admit(state: SandboxState, host: string, port: number): Promise<Admitted | Refusal>;
}
