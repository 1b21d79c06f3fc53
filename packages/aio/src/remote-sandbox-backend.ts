import {
  canonicalSkillsRoot,
  errorMessage,
  InvalidArgumentError,
  NetworkPolicyUnenforceableError,
  networkPolicyRestricts,
  SandboxRuntimeError,
  resolveEffectiveUserId,
  silentLogger,
  sleep,
} from '@sbx/core';
import { DEFAULT_SKILLS_ROOT } from '@sbx/core/internal';
import type { Logger, NetworkPolicySupport } from '@sbx/core';
import { AioHttpClient } from './aio-http.js';
import { AioHttpError } from './aio-http-error.js';
import { provisionerExtraMounts } from './provisioner-mounts.js';
import { CREATE_READY_TIMEOUT_MS, waitForSandboxReady } from './readiness.js';
import type {
  BackendCallOptions,
  CreateSandboxRequest,
  SandboxBackend,
  SandboxHealth,
} from './sandbox-backend.js';
import type { SandboxInfo } from './sandbox-info.js';

export const PROVISIONER_CREATE_TIMEOUT_MS = 30_000;
export const PROVISIONER_DESTROY_TIMEOUT_MS = 15_000;
export const PROVISIONER_QUERY_TIMEOUT_MS = 10_000;

export interface RemoteSandboxBackendOptions {
  /** Base URL of the provisioner, e.g. `http://provisioner:8002`. */
  provisionerUrl: string;
  /** Sent as `X-API-Key` when non-empty. */
  apiKey?: string;
  /** The skills root (validated; a non-default root is sent as `skills_container_path`). */
  skillsRoot?: string;
  /** Readiness budget after create; 0 skips the wait. Default 60 s. */
  readyTimeoutMs?: number;
  /**
   * How long a health check waits for a sandbox the provisioner reports `Pending` (starting: a
   * node port is allocated at once, the image may still be pulling) to be `Running`. Still
   * Pending after it: `unknown` (kept; the next check decides), never `dead`. Default 0.
   */
  startingWaitMs?: number;
  /** Pause between the reads of that wait. Default 1 s. */
  startingPollMs?: number;
  logger?: Logger;
}

export interface ProvisionerCapabilities {
  larkCliInitImage: boolean;
  larkCliBrokerImage: boolean;
  /** `network_mode: none` is enforced (a NetworkPolicy with no egress per such sandbox). */
  networkNone: boolean;
  /** `network_mode: open` goes through the provisioner's egress proxy (information only). */
  egressProxy: boolean;
}

/**
 * One boolean capability. Absent is false (a provisioner older than the field); any other type is
 * refused, so a malformed answer never turns into "enforced".
 */
function capabilityFlag(body: Json, field: string): boolean {
  const value = body[field];
  if (value === undefined) return false;
  if (typeof value !== 'boolean') {
    throw new SandboxRuntimeError(
      `Provisioner capabilities: ${field} must be a boolean, got ${value === null ? 'null' : typeof value}`,
      { details: { field } },
    );
  }
  return value;
}

type Json = Record<string, unknown>;

function asObject(value: unknown): Json | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Json)
    : undefined;
}

function nonEmpty(value: unknown): value is string {
  return typeof value === 'string' && value !== '';
}

function errorText(err: unknown): string {
  return errorMessage(err);
}

/**
 * Sandboxes as Pods behind a provisioner service (`POST/GET/DELETE /api/sandboxes[/{id}]`,
 * `GET /api/capabilities`, `GET /health`). The provisioner owns volumes and thread data, so
 * `usesThreadDataMounts` is false: uploads must be synced into the sandbox.
 */
export class RemoteSandboxBackend implements SandboxBackend {
  readonly kind = 'remote' as const;
  readonly usesThreadDataMounts = false;
  readonly provisionerUrl: string;
  readonly skillsRoot: string;
  private readonly http: AioHttpClient;
  private readonly logger: Logger;
  private readonly readyTimeoutMs: number;
  private readonly startingWaitMs: number;
  private readonly startingPollMs: number;

  constructor(options: RemoteSandboxBackendOptions) {
    if (!options || !nonEmpty(options.provisionerUrl)) {
      throw new InvalidArgumentError('RemoteSandboxBackend needs a provisionerUrl');
    }
    try {
      new URL(options.provisionerUrl);
    } catch (err) {
      throw new InvalidArgumentError(`provisionerUrl is not a URL: ${options.provisionerUrl}`, {
        cause: err,
      });
    }
    this.provisionerUrl = options.provisionerUrl.replace(/\/+$/, '');
    this.skillsRoot = canonicalSkillsRoot(options.skillsRoot ?? DEFAULT_SKILLS_ROOT);
    this.logger = options.logger ?? silentLogger;
    this.readyTimeoutMs = options.readyTimeoutMs ?? CREATE_READY_TIMEOUT_MS;
    this.startingWaitMs = Math.max(0, options.startingWaitMs ?? 0);
    this.startingPollMs = Math.max(1, options.startingPollMs ?? 1_000);
    this.http = new AioHttpClient({
      baseUrl: this.provisionerUrl,
      headers: options.apiKey ? { 'X-API-Key': options.apiKey } : {},
    });
  }

  async create(request: CreateSandboxRequest): Promise<SandboxInfo> {
    const provisions =
      request.provisionLarkCliRuntime === true || request.provisionLarkCliBroker === true;
    const body: Json = {
      sandbox_id: request.sandboxId,
      thread_id: request.threadId ?? null,
      user_id: resolveEffectiveUserId(request.userId),
      include_legacy_skills: request.includeLegacySkills === true,
      provision_lark_cli_runtime: request.provisionLarkCliRuntime === true,
      provision_lark_cli_broker: request.provisionLarkCliBroker === true,
    };
    const network = request.network;
    if (network !== undefined && networkPolicyRestricts(network)) {
      // The provisioner enforces mode none only; anything else restricting was refused at acquire,
      // and must not reach a create that would run it with open egress.
      if (network.mode !== 'none') {
        throw new NetworkPolicyUnenforceableError('RemoteSandboxBackend', network.mode);
      }
      body.network_mode = 'none';
    }
    if (this.skillsRoot !== DEFAULT_SKILLS_ROOT) body.skills_container_path = this.skillsRoot;
    const mounts = provisionerExtraMounts(request.extraMounts ?? [], {
      skillsRoot: this.skillsRoot,
      provisionsLarkCliRuntime: provisions,
    });
    if (mounts.length > 0) body.extra_mounts = mounts;
    let url: unknown;
    try {
      const res = await this.http.json('POST', '/api/sandboxes', body, {
        timeoutMs: PROVISIONER_CREATE_TIMEOUT_MS,
        signal: request.signal,
      });
      url = asObject(res.body)?.sandbox_url;
    } catch (err) {
      throw new SandboxRuntimeError(`Provisioner create failed: ${errorText(err)}`, { cause: err });
    }
    if (!nonEmpty(url)) {
      throw new SandboxRuntimeError(
        'Provisioner create failed: the answer carries no sandbox_url',
        {
          details: { sandbox_id: request.sandboxId },
        },
      );
    }
    const info: SandboxInfo = {
      sandboxId: request.sandboxId,
      sandboxUrl: url,
      createdAt: Date.now() / 1000,
      skillsRoot: this.skillsRoot,
    };
    if (this.readyTimeoutMs > 0) {
      const ready = await waitForSandboxReady(url, {
        timeoutMs: this.readyTimeoutMs,
        ...(request.signal ? { signal: request.signal } : {}),
      });
      if (!ready) {
        await this.destroy(info);
        throw new SandboxRuntimeError(
          `Sandbox ${request.sandboxId} did not answer GET /v1/sandbox within ${this.readyTimeoutMs} ms`,
          { details: { sandbox_id: request.sandboxId, url } },
        );
      }
    }
    return info;
  }

  /**
   * `DELETE /api/sandboxes/<id>`. Best-effort, as the provisioner owns the Pod's life: a failure
   * is logged as a warning, not thrown.
   */
  async destroy(info: SandboxInfo, options: BackendCallOptions = {}): Promise<void> {
    try {
      await this.http.json(
        'DELETE',
        `/api/sandboxes/${encodeURIComponent(info.sandboxId)}`,
        undefined,
        {
          timeoutMs: PROVISIONER_DESTROY_TIMEOUT_MS,
          signal: options.signal,
        },
      );
    } catch (err) {
      this.logger.warn('Provisioner destroy failed', {
        sandbox_id: info.sandboxId,
        error: errorText(err),
      });
    }
  }

  private async getSandbox(sandboxId: string, options: BackendCallOptions): Promise<Json> {
    const res = await this.http.json(
      'GET',
      `/api/sandboxes/${encodeURIComponent(sandboxId)}`,
      undefined,
      {
        timeoutMs: PROVISIONER_QUERY_TIMEOUT_MS,
        signal: options.signal,
      },
    );
    return asObject(res.body) ?? {};
  }

  /**
   * 404 is dead; `Running` alive; `Pending` is starting: waited for (`startingWaitMs`), then
   * unknown if still Pending; any other phase dead; a failed check unknown.
   */
  async checkHealth(info: SandboxInfo, options: BackendCallOptions = {}): Promise<SandboxHealth> {
    try {
      const deadline = Date.now() + this.startingWaitMs;
      for (;;) {
        const body = await this.getSandbox(info.sandboxId, options);
        if (body.status === 'Running') return 'alive';
        if (body.status !== 'Pending') return 'dead';
        if (Date.now() >= deadline) {
          this.logger.info(`Sandbox ${info.sandboxId} is still starting (Pending); keeping it`);
          return 'unknown';
        }
        await sleep(this.startingPollMs, { signal: options.signal });
      }
    } catch (err) {
      if (err instanceof AioHttpError && err.status === 404) return 'dead';
      this.logger.warn(`Provisioner health check failed for ${info.sandboxId}`, {
        error: errorText(err),
      });
      return 'unknown';
    }
  }

  async discover(sandboxId: string, options: BackendCallOptions = {}): Promise<SandboxInfo | null> {
    try {
      const body = await this.getSandbox(sandboxId, options);
      if (!nonEmpty(body.sandbox_url)) return null;
      return {
        sandboxId,
        sandboxUrl: body.sandbox_url,
        createdAt: Date.now() / 1000,
        skillsRoot: this.skillsRoot,
      };
    } catch (err) {
      this.logger.debug('Provisioner discover found nothing usable', {
        sandbox_id: sandboxId,
        error: errorText(err),
      });
      return null;
    }
  }

  async listRunning(options: BackendCallOptions = {}): Promise<SandboxInfo[]> {
    let body: Json | undefined;
    try {
      const res = await this.http.json('GET', '/api/sandboxes', undefined, {
        timeoutMs: PROVISIONER_QUERY_TIMEOUT_MS,
        signal: options.signal,
      });
      body = asObject(res.body);
    } catch (err) {
      this.logger.warn('Provisioner list failed', { error: errorText(err) });
      return [];
    }
    const items = body?.sandboxes;
    if (!Array.isArray(items)) return [];
    const now = Date.now() / 1000;
    const out: SandboxInfo[] = [];
    for (const item of items) {
      const o = asObject(item);
      if (!o || !nonEmpty(o.sandbox_id) || !nonEmpty(o.sandbox_url)) continue;
      out.push({ sandboxId: o.sandbox_id, sandboxUrl: o.sandbox_url, createdAt: now });
    }
    return out;
  }

  /**
   * `GET /api/capabilities`. Throws when the provisioner cannot be asked, or a flag it sends is not
   * a boolean (`SandboxRuntimeError`); an absent flag is false.
   */
  async capabilities(options: BackendCallOptions = {}): Promise<ProvisionerCapabilities> {
    const res = await this.http.json('GET', '/api/capabilities', undefined, {
      timeoutMs: PROVISIONER_QUERY_TIMEOUT_MS,
      signal: options.signal,
    });
    const body = asObject(res.body);
    if (body === undefined) {
      throw new SandboxRuntimeError('Provisioner capabilities: the answer is not a JSON object');
    }
    return {
      larkCliInitImage: capabilityFlag(body, 'lark_cli_init_image'),
      larkCliBrokerImage: capabilityFlag(body, 'lark_cli_broker_image'),
      networkNone: capabilityFlag(body, 'network_none'),
      egressProxy: capabilityFlag(body, 'egress_proxy'),
    };
  }

  /**
   * The network policies this provisioner enforces: mode none when it says `network_none`; never
   * filtering or credentials (its egress proxy applies its own policy, not a sandbox's).
   */
  async networkSupport(options: BackendCallOptions = {}): Promise<NetworkPolicySupport> {
    let caps: ProvisionerCapabilities;
    try {
      caps = await this.capabilities(options);
    } catch (err) {
      throw new SandboxRuntimeError(
        `Provisioner capabilities unavailable, so no network policy can be admitted: ${errorText(err)}`,
        { cause: err },
      );
    }
    return { none: caps.networkNone, filtered: false, credentials: false };
  }

  /** `GET /health` answered `{"status":"ok"}`. Never throws. */
  async healthy(options: BackendCallOptions = {}): Promise<boolean> {
    try {
      const res = await this.http.json('GET', '/health', undefined, {
        timeoutMs: PROVISIONER_QUERY_TIMEOUT_MS,
        signal: options.signal,
      });
      return asObject(res.body)?.status === 'ok';
    } catch (err) {
      this.logger.debug('Provisioner health endpoint failed', { error: errorText(err) });
      return false;
    }
  }

  /** Releases pooled sockets. Idempotent. */
  close(): Promise<void> {
    return this.http.close();
  }
}
