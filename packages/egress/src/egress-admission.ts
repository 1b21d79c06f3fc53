/**
 * Whether a sandbox may reach `host:port`, and at which address: the policy decides the name
 * (with `onEgressRequest` for hosts off the allow list), the proxy's own resolver answers, and
 * every address of the answer must pass the address check. The address returned is the one
 * connected to, so a second DNS answer cannot rebind the connection.
 */
import { networkVerdict, type Logger } from '@sbx/core';
import { blockedAddressReason, parseIpLiteral } from './egress-address.js';
import type { Admitted, EgressResolvedLimits, SandboxState } from './egress-context.js';
import { Refusal } from './egress-refusal.js';

/** Resolves a host name to its addresses; the proxy's own DNS, never the sandbox's. */
export type EgressResolver = (host: string) => Promise<readonly string[]>;

/** A request the policy denied, offered to the host application for approval. */
export interface EgressApprovalRequest {
  readonly sandboxId: string;
  readonly threadId: string | undefined;
  readonly host: string;
  readonly port: number;
}

export interface EgressAdmissionOptions {
  readonly resolve: EgressResolver;
  readonly allowPrivate: ((address: string) => boolean) | undefined;
  readonly onEgressRequest: ((request: EgressApprovalRequest) => Promise<boolean>) | undefined;
  readonly limits: EgressResolvedLimits;
  readonly logger: Logger;
  /** Whether `state` is still the open listener of its sandbox (approvals of a closed one drop). */
  readonly isOpen: (state: SandboxState) => boolean;
}

function withTimeout<T>(promise: Promise<T>, ms: number, onTimeout: () => T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<T>((resolve) => {
      timer = setTimeout(() => resolve(onTimeout()), ms);
      timer.unref();
    }),
  ]).finally(() => clearTimeout(timer));
}

/** `host[:port]` of an authority, host lower-cased; `undefined` if malformed. */
export function parseAuthority(
  text: string,
  defaultPort: number | undefined,
): { host: string; port: number } | undefined {
  const match = /^(\[[0-9a-fA-F:.]+\]|[^:[\]/@?#\s]+)(?::([0-9]{1,5}))?$/.exec(text);
  if (!match) return undefined;
  const port = match[2] !== undefined ? Number(match[2]) : defaultPort;
  if (port === undefined || port < 1 || port > 65535) return undefined;
  let host = match[1]!.toLowerCase();
  if (host.endsWith('.')) host = host.slice(0, -1);
  return { host, port };
}

export class EgressAdmission {
  readonly #options: EgressAdmissionOptions;

  constructor(options: EgressAdmissionOptions) {
    this.#options = options;
  }

  /**
   * The address to connect to for `host:port`, or the refusal. The name is decided by the policy
   * first; every resolved address must then pass the address check (one bad answer refuses the
   * request: a resolver that mixes in 127.0.0.1 is rebinding).
   */
  async admit(state: SandboxState, host: string, port: number): Promise<Admitted | Refusal> {
    const literal = parseIpLiteral(host);
    if (literal !== undefined) {
      // Rules name domains; an IP literal is reachable in open mode only, and checked as any address.
      if (state.policy.mode !== 'open') return new Refusal(403, 'ip-literal');
      return this.#checkAddresses([literal], 'open');
    }
    if (!/^[a-z0-9.-]{1,253}$/.test(host)) return new Refusal(400, 'bad-request');
    const verdict = networkVerdict(state.policy, host, port);
    let reason = verdict.reason;
    if (!verdict.allowed) {
      const approvable = verdict.reason === 'not-allowed' && this.#options.onEgressRequest;
      if (!approvable || !(await this.#approve(state, host, port))) {
        return new Refusal(403, verdict.reason);
      }
      reason = 'approved';
    }
    let addresses: readonly string[];
    try {
      addresses = await withTimeout(
        this.#options.resolve(host),
        this.#options.limits.resolveTimeoutMs,
        () => [],
      );
    } catch (error) {
      this.#options.logger.debug('egress resolve failed', { host, error });
      return new Refusal(502, 'resolve-failed');
    }
    if (addresses.length === 0) return new Refusal(502, 'resolve-failed');
    return this.#checkAddresses(addresses, reason);
  }

  #checkAddresses(addresses: readonly string[], reason: string): Admitted | Refusal {
    for (const address of addresses) {
      const blocked = blockedAddressReason(address);
      if (blocked !== undefined && !this.#options.allowPrivate?.(address)) {
        return new Refusal(403, `blocked-address:${blocked}`);
      }
    }
    return { address: addresses[0]!, reason };
  }

  async #approve(state: SandboxState, host: string, port: number): Promise<boolean> {
    const key = `${host}:${port}`;
    if (state.approved.has(key)) return true;
    const hook = this.#options.onEgressRequest!;
    const { limits, logger } = this.#options;
    const request = { sandboxId: state.sandboxId, threadId: state.threadId, host, port };
    let approved = false;
    try {
      approved = (await withTimeout(hook(request), limits.approvalTimeoutMs, () => false)) === true;
    } catch (error) {
      logger.warn('egress approval hook failed; denied', { ...request, error });
      return false;
    }
    if (!approved) return false;
    if (state.approved.size >= limits.maxApprovalsPerSandbox) {
      logger.warn('egress approvals full for this sandbox; denied', request);
      return false;
    }
    if (!this.#options.isOpen(state)) return false;
    state.approved.add(key);
    return true;
  }
}
