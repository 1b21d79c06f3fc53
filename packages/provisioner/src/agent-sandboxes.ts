import { errorMessage, silentLogger, sleep, systemClock } from '@sbx/core';
import type { Clock, Logger } from '@sbx/core';
import type { CreateSandboxRequest } from './create-request.js';
import { isValidSandboxIdForPods } from './create-request.js';
import { createOrAwait, goneBy, isTerminating } from './create-or-await.js';
import { AGENT_SANDBOX_GROUP } from './kube-api.js';
import type { KubeApi } from './kube-api.js';
import type { AgentSandbox, Service } from './kube-objects.js';
import type { ProvisionerBackend } from './provisioner-backend.js';
import { KubeApiError, ProvisionerHttpError, isKubeStatus } from './provisioner-errors.js';
import type { ProvisionerSettings } from './provisioner-settings.js';
import {
  SANDBOX_ID_LABEL,
  accessUrl,
  podName,
  sandboxLabels,
  sandboxPod,
  sandboxSelector,
  sandboxService,
  serviceName,
} from './sandbox-objects.js';
import type { DeleteResponse, GarbageReport, SandboxResponse } from './sandbox-pods.js';

export interface AgentSandboxesOptions {
  settings: ProvisionerSettings;
  kube: KubeApi;
  clock?: Clock;
  logger?: Logger;
  /** Reads while waiting for the access URL (default 20) and the pause between them (500 ms). */
  urlPolls?: number;
  pollIntervalMs?: number;
  transientAttempts?: number;
}

const TRANSIENT = new Set([0, 429, 500, 502, 503, 504]);

function kubeReason(err: unknown): string {
  return err instanceof KubeApiError && err.reason
    ? `${err.reason}: ${errorMessage(err)}`
    : errorMessage(err);
}

/**
 * The API's `status` for a `Sandbox`, from its `Ready` condition (the controller's reasons):
 * Ready → `Running`; a failed or finished Pod, or an expired Sandbox → `Failed` / `Succeeded`;
 * being deleted → `Terminating`; anything else not ready yet → `Pending`.
 */
export function sandboxPhase(sandbox: AgentSandbox): string {
  if (isTerminating(sandbox)) return 'Terminating';
  const ready = sandbox.status?.conditions?.find((c) => c.type === 'Ready');
  if (ready?.status === 'True') return 'Running';
  switch (ready?.reason) {
    case 'PodFailed':
    case 'SandboxExpired':
      return 'Failed';
    case 'PodSucceeded':
      return 'Succeeded';
    case 'SandboxSuspended':
      return 'Suspended';
    default:
      return 'Pending';
  }
}

/**
 * Sandboxes as kubernetes-sigs/agent-sandbox `Sandbox` objects: sbx's Pod spec is the pod
 * template, the controller makes the Pod and a headless Service, a `shutdownTime` backstop expires
 * it even when no gateway is left, and `Ready` is the status. The URL is the controller's Service
 * (`status.serviceFQDN`) with `SANDBOX_SERVICE_TYPE=ClusterIP`; with `NodePort` sbx adds its own
 * NodePort Service, owned by the `Sandbox` (so the cluster deletes it with it).
 */
export class AgentSandboxes implements ProvisionerBackend {
  readonly #settings: ProvisionerSettings;
  readonly #kube: KubeApi;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #urlPolls: number;
  readonly #pollIntervalMs: number;
  readonly #attempts: number;
  readonly #creating = new Map<string, Promise<SandboxResponse>>();

  constructor(options: AgentSandboxesOptions) {
    this.#settings = options.settings;
    this.#kube = options.kube;
    this.#clock = options.clock ?? systemClock;
    this.#logger = options.logger ?? silentLogger;
    this.#urlPolls = options.urlPolls ?? 20;
    this.#pollIntervalMs = options.pollIntervalMs ?? 500;
    this.#attempts = Math.max(1, options.transientAttempts ?? 3);
  }

  get namespace(): string {
    return this.#settings.namespace;
  }

  get #version(): string {
    return this.#settings.agentSandboxVersion;
  }

  async ensureNamespace(): Promise<void> {
    const name = this.namespace;
    try {
      await this.#kube.readNamespace(name);
      return;
    } catch (err) {
      if (!isKubeStatus(err, 404)) throw err;
    }
    try {
      await this.#kube.createNamespace({
        metadata: {
          name,
          labels: { 'app.kubernetes.io/name': 'sbx', 'app.kubernetes.io/component': 'sandbox' },
        },
      });
    } catch (err) {
      if (!isKubeStatus(err, 409)) throw err;
    }
  }

  /** The `Sandbox` object of a create: sbx's Pod spec and labels as its template. */
  sandboxObject(request: CreateSandboxRequest): AgentSandbox {
    const pod = sandboxPod(this.#settings, request);
    const id = request.sandboxId;
    const after = this.#settings.shutdownAfterSeconds;
    return {
      apiVersion: `${AGENT_SANDBOX_GROUP}/${this.#version}`,
      kind: 'Sandbox',
      metadata: {
        name: podName(id),
        namespace: this.namespace,
        labels: sandboxLabels(id, this.#settings.compat),
      },
      spec: {
        podTemplate: { metadata: { labels: pod.metadata!.labels! }, spec: pod.spec! },
        service: true,
        ...(after > 0
          ? {
              // Whole seconds: the schema's date-time, as the API server writes it back.
              shutdownTime: new Date(Math.floor(this.#clock.now() / 1000) * 1000 + after * 1000)
                .toISOString()
                .replace('.000Z', 'Z'),
              shutdownPolicy: 'Delete' as const,
            }
          : {}),
      },
    };
  }

  create(request: CreateSandboxRequest): Promise<SandboxResponse> {
    const pending = this.#creating.get(request.sandboxId);
    if (pending) return pending;
    const attempt = this.#create(request).finally(() => this.#creating.delete(request.sandboxId));
    this.#creating.set(request.sandboxId, attempt);
    return attempt;
  }

  async #create(request: CreateSandboxRequest): Promise<SandboxResponse> {
    const id = request.sandboxId;
    const body = this.sandboxObject(request);
    const existing = await this.#answer(id).catch((err: unknown) => {
      this.#logger.debug('fast-path read failed; creating', {
        sandboxId: id,
        error: errorMessage(err),
      });
      return undefined;
    });
    if (existing !== undefined) return existing;
    const options = {
      clock: this.#clock,
      logger: this.#logger,
      waitMs: this.#settings.terminatingWaitMs,
      pollIntervalMs: this.#pollIntervalMs,
      transient: <T>(call: () => Promise<T>) => this.#transient(call),
    };
    let created: AgentSandbox | undefined;
    try {
      await createOrAwait(
        options,
        'Sandbox',
        podName(id),
        async () => {
          created = await this.#kube.createSandbox(this.namespace, this.#version, body);
        },
        () => this.#kube.readSandbox(this.namespace, this.#version, podName(id)),
      );
    } catch (err) {
      if (err instanceof ProvisionerHttpError) throw err;
      throw new ProvisionerHttpError(500, `Sandbox creation failed: ${kubeReason(err)}`, {
        cause: err,
      });
    }
    if (this.#settings.serviceType === 'NodePort') {
      const owner =
        created ?? (await this.#kube.readSandbox(this.namespace, this.#version, podName(id)));
      try {
        await createOrAwait(
          options,
          'Service',
          serviceName(id),
          () => this.#kube.createService(this.namespace, this.#nodePortService(id, owner)),
          () => this.#kube.readService(this.namespace, serviceName(id)),
        );
      } catch (err) {
        if (err instanceof ProvisionerHttpError) throw err;
        throw new ProvisionerHttpError(500, `Service creation failed: ${kubeReason(err)}`, {
          cause: err,
        });
      }
    }
    for (let poll = 0; poll < this.#urlPolls; poll++) {
      try {
        const answer = await this.#answer(id);
        if (answer !== undefined) return answer;
      } catch (err) {
        if (isKubeStatus(err, 401) || isKubeStatus(err, 403)) {
          throw new ProvisionerHttpError(500, `Sandbox read failed: ${kubeReason(err)}`, {
            cause: err,
          });
        }
      }
      await sleep(this.#pollIntervalMs, { clock: this.#clock });
    }
    throw new ProvisionerHttpError(500, 'Service access URL was not available in time');
  }

  /** sbx's NodePort Service for the Sandbox's Pod, owned by the Sandbox. */
  #nodePortService(id: string, owner: AgentSandbox): Service {
    const service = sandboxService(this.#settings, id);
    const uid = owner.metadata?.uid;
    if (uid) {
      service.metadata!.ownerReferences = [
        {
          apiVersion: `${AGENT_SANDBOX_GROUP}/${this.#version}`,
          kind: 'Sandbox',
          name: podName(id),
          uid,
          blockOwnerDeletion: false,
        },
      ];
    }
    return service;
  }

  /** The URL of a Sandbox, or undefined while it has none. */
  async #url(id: string, sandbox: AgentSandbox): Promise<string | undefined> {
    if (this.#settings.serviceType === 'ClusterIP') {
      const fqdn = sandbox.status?.serviceFQDN;
      return fqdn ? `http://${fqdn}:${this.#settings.containerPort}` : undefined;
    }
    try {
      const service = await this.#kube.readService(this.namespace, serviceName(id));
      return isTerminating(service) ? undefined : accessUrl(this.#settings, service);
    } catch (err) {
      if (isKubeStatus(err, 404)) return undefined;
      throw err;
    }
  }

  /** The answer for a Sandbox with a URL that is not being deleted; undefined otherwise. */
  async #answer(id: string): Promise<SandboxResponse | undefined> {
    let sandbox: AgentSandbox;
    try {
      sandbox = await this.#kube.readSandbox(this.namespace, this.#version, podName(id));
    } catch (err) {
      if (isKubeStatus(err, 404)) return undefined;
      throw err;
    }
    const status = sandboxPhase(sandbox);
    if (status === 'Terminating') return undefined;
    const url = await this.#url(id, sandbox);
    return url === undefined ? undefined : { sandbox_id: id, sandbox_url: url, status };
  }

  async #transient<T>(call: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await call();
      } catch (err) {
        const status = err instanceof KubeApiError ? err.status : -1;
        if (!TRANSIENT.has(status) || attempt >= this.#attempts) throw err;
        await sleep(250 * 2 ** (attempt - 1), { clock: this.#clock });
      }
    }
  }

  async get(id: string): Promise<SandboxResponse> {
    let answer: SandboxResponse | undefined;
    if (isValidSandboxIdForPods(id)) {
      try {
        answer = await this.#answer(id);
      } catch (err) {
        throw new ProvisionerHttpError(503, `Sandbox read failed: ${kubeReason(err)}`, {
          cause: err,
        });
      }
    }
    if (answer === undefined) throw new ProvisionerHttpError(404, `Sandbox '${id}' not found`);
    return answer;
  }

  /**
   * Deletes the Sandbox (the cluster removes its Pod and Services, which it owns) and sbx's
   * NodePort Service, then waits, bounded, for the Sandbox to be gone.
   */
  async delete(id: string): Promise<DeleteResponse> {
    if (!isValidSandboxIdForPods(id)) return { ok: true, sandbox_id: id, terminated: true };
    const failures: string[] = [];
    const remove = async (what: string, call: () => Promise<void>) => {
      try {
        await this.#transient(call);
      } catch (err) {
        if (!isKubeStatus(err, 404)) failures.push(`${what}: ${kubeReason(err)}`);
      }
    };
    if (this.#settings.serviceType === 'NodePort') {
      await remove('service', () => this.#kube.deleteService(this.namespace, serviceName(id)));
    }
    await remove('sandbox', () =>
      this.#kube.deleteSandbox(this.namespace, this.#version, podName(id)),
    );
    if (failures.length > 0)
      throw new ProvisionerHttpError(500, `Partial cleanup: ${failures.join('; ')}`);
    const terminated = await goneBy(
      { clock: this.#clock, pollIntervalMs: this.#pollIntervalMs },
      () => this.#kube.readSandbox(this.namespace, this.#version, podName(id)),
      this.#clock.now() + this.#settings.deleteTimeoutMs,
    );
    if (!terminated)
      this.#logger.warn('sandbox still terminating after the delete wait', { sandboxId: id });
    return { ok: true, sandbox_id: id, terminated };
  }

  async list(): Promise<{ sandboxes: SandboxResponse[]; count: number }> {
    const selector = sandboxSelector(this.#settings);
    const [sandboxes, services] = await Promise.all([
      this.#kube.listSandboxes(this.namespace, this.#version, selector),
      this.#settings.serviceType === 'NodePort'
        ? this.#kube.listServices(this.namespace, selector)
        : Promise.resolve({ items: [] as Service[] }),
    ]);
    const urls = new Map(
      services.items
        .filter((s) => !isTerminating(s))
        .map((s) => [s.metadata?.labels?.[SANDBOX_ID_LABEL], accessUrl(this.#settings, s)]),
    );
    const out: SandboxResponse[] = [];
    for (const sandbox of sandboxes.items) {
      const id = sandbox.metadata?.labels?.[SANDBOX_ID_LABEL];
      if (!id || !isValidSandboxIdForPods(id)) continue;
      const status = sandboxPhase(sandbox);
      if (status === 'Terminating') continue;
      const url =
        this.#settings.serviceType === 'ClusterIP'
          ? sandbox.status?.serviceFQDN
            ? `http://${sandbox.status.serviceFQDN}:${this.#settings.containerPort}`
            : undefined
          : urls.get(id);
      if (url === undefined) continue;
      out.push({ sandbox_id: id, sandbox_url: url, status });
    }
    return { sandboxes: out, count: out.length };
  }

  /**
   * sbx's NodePort Services whose Sandbox is gone (the cluster's garbage collector normally
   * removes them with their owner; this catches one made without an owner). The Sandboxes
   * themselves need no collection: the controller keeps their Pods, and `shutdownTime` ends them.
   */
  async collectGarbage(): Promise<GarbageReport> {
    const report: GarbageReport = { pods: [], services: [] };
    if (this.#settings.serviceType !== 'NodePort') return report;
    const selector = sandboxSelector(this.#settings);
    const [sandboxes, services] = await Promise.all([
      this.#kube.listSandboxes(this.namespace, this.#version, selector),
      this.#kube.listServices(this.namespace, selector),
    ]);
    const ids = new Set(sandboxes.items.map((s) => s.metadata?.labels?.[SANDBOX_ID_LABEL]));
    const cutoff = this.#clock.now() - this.#settings.gcGraceMs;
    for (const service of services.items) {
      const id = service.metadata?.labels?.[SANDBOX_ID_LABEL];
      if (!id || !isValidSandboxIdForPods(id) || ids.has(id) || this.#creating.has(id)) continue;
      const created = service.metadata?.creationTimestamp;
      if (isTerminating(service) || (created !== undefined && new Date(created).getTime() > cutoff))
        continue;
      await this.#kube.deleteService(this.namespace, serviceName(id)).then(
        () => report.services.push(id),
        (err: unknown) =>
          this.#logger.warn('could not collect a service', {
            sandboxId: id,
            error: errorMessage(err),
          }),
      );
    }
    return report;
  }
}
